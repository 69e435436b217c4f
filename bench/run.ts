import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { dirname, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { BenchContext } from './bench-context.ts';
import { FULL_SIZES, QUICK_SIZES } from './bench-sizes.ts';
import { describeMachine } from './machine.ts';
import type { Section } from './section.ts';
import { archiveAnalysisSection } from './sections/archive-analysis.ts';
import { decodeSection } from './sections/decode.ts';
import { detectorSection } from './sections/detector.ts';
import { floodSection } from './sections/flood.ts';
import { historySection } from './sections/history.ts';
import { kafkaSection } from './sections/kafka-roles.ts';
import { otlpHttpIngestSection } from './sections/otlp-http-ingest.ts';
import { persistenceSection } from './sections/persistence.ts';
import { formatReport, type Report, type Row, reportRow, type SectionTiming } from './table.ts';

/**
 * `pnpm bench [--quick] [--out FILE] [--section NAME]… [--detector-baseline DIR]`: runs every
 * section (or those named), one after another, prints one table and writes it as JSON (default
 * bench/results/latest.json). Progress goes to stderr, the table to stdout. With
 * `--detector-baseline`, the detector section also runs the detector of the checkout in DIR (its
 * dependencies installed) beside this one's, on this checkout's stream.
 */
const SECTIONS: readonly Section[] = [
  decodeSection,
  otlpHttpIngestSection,
  detectorSection,
  persistenceSection,
  archiveAnalysisSection,
  kafkaSection,
  historySection,
  floodSection,
];

const DEFAULT_OUT = new URL('./results/latest.json', import.meta.url);

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      quick: { type: 'boolean', default: false },
      out: { type: 'string' },
      section: { type: 'string', multiple: true },
      'detector-baseline': { type: 'string' },
    },
    strict: true,
  });
  const chosen = values.section ?? SECTIONS.map((section) => section.name);
  const unknown = chosen.filter((name) => !SECTIONS.some((section) => section.name === name));
  if (unknown.length > 0) {
    throw new Error(
      `unknown section ${unknown.map((name) => JSON.stringify(name)).join(', ')}; sections: ${SECTIONS.map((s) => JSON.stringify(s.name)).join(', ')}`,
    );
  }

  const mode = values.quick ? 'quick' : 'full';
  const startedAt = new Date();
  const machine = describeMachine();
  const baseline = values['detector-baseline'];
  const context = new BenchContext(values.quick ? QUICK_SIZES : FULL_SIZES, {
    detectorBaseline: baseline === undefined ? undefined : resolve(baseline),
  });
  const rows: Row[] = [];
  const timings: SectionTiming[] = [];
  try {
    for (const section of SECTIONS.filter((s) => chosen.includes(s.name))) {
      const started = performance.now();
      const loadAverageAtStart = loadavg()[0] ?? 0;
      process.stderr.write(`bench: ${section.name}…`);
      rows.push(...(await section.run(context)));
      const seconds = (performance.now() - started) / 1000;
      timings.push({ name: section.name, seconds, loadAverageAtStart });
      process.stderr.write(` ${seconds.toFixed(1)} s\n`);
    }
  } finally {
    context.close();
  }

  const [one = 0, five = 0, fifteen = 0] = loadavg();
  const report: Report = {
    mode,
    startedAt: startedAt.toISOString(),
    durationSeconds: (Date.now() - startedAt.getTime()) / 1000,
    machine,
    loadAverageAtEnd: [one, five, fifteen],
    sections: timings,
    rows: rows.map(reportRow),
  };
  const out = values.out ?? DEFAULT_OUT.pathname;
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, `${JSON.stringify(report, null, 2)}\n`);
  process.stdout.write(`${formatReport(report)}\n\nwritten to ${out}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(
    `\nbench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exitCode = 1;
});
