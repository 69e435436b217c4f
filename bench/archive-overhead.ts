import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resolveServeConfig, silentLogger, startServe } from '@keyscope/analyzer';
import { LoadGeneratorProcess } from './load-generator-process.ts';
import { writePayloadFile } from './payload-file.ts';
import { simulatedPayloads } from './workloads/simulated-payloads.ts';

/**
 * What serve's payload archive (`archive.path`) costs OTLP/HTTP ingest: the embedded service in
 * this process, the simulator's benchmark traffic (512 spans a payload) posted as fast as it is
 * answered by the load generator's process, with the archive off and on in turn. Bounded: ROUNDS
 * rounds of REQUESTS requests each way.
 *
 *   npx tsx bench/archive-overhead.ts [rounds] [requests]
 */
const ROUNDS = Number(process.argv[2] ?? 3);
const REQUESTS = Number(process.argv[3] ?? 400);
const CONNECTIONS = 10;

const dir = mkdtempSync(join(tmpdir(), 'keyscope-archive-overhead-'));
const payloads = simulatedPayloads(100_000, 7);
const file = join(dir, 'payloads.bin');
writePayloadFile(file, payloads.bodies);
const load = LoadGeneratorProcess.start();
await load.load(file);

async function measure(archive: boolean, round: number) {
  const runDir = join(dir, `${archive ? 'on' : 'off'}-${round}`);
  const config = resolveServeConfig({
    db: { path: join(`${runDir}.db`) },
    api: { port: 0 },
    otlp: { http: { port: 0 }, grpc: { port: 0 } },
    ...(archive ? { archive: { path: runDir } } : {}),
  });
  const service = await startServe(config, { logger: silentLogger, now: () => payloads.endUnixMillis });
  try {
    const url = `http://127.0.0.1:${service.addresses.otlpHttp.port}/v1/traces`;
    const loopBefore = performance.eventLoopUtilization();
    const cpuBefore = process.cpuUsage();
    const result = await load.run(url, REQUESTS, CONNECTIONS);
    const loop = performance.eventLoopUtilization(loopBefore);
    const cpu = process.cpuUsage(cpuBefore);
    const spans = service.ingestCounts().http.spansAccepted;
    const rate = spans / (result.elapsedMillis / 1000);
    if (archive) {
      const metrics = await (await fetch(`http://127.0.0.1:${service.addresses.api.port}/metrics`)).text();
      const lines = metrics.split('\n').filter((line) => /^keyscope_archive_\w+(\{[^}]*\})? /.test(line));
      console.log(`  at the end of the run: ${lines.join(', ')}`);
    }
    // The event loop's busy time is what ingest waits for; the process's CPU includes the archive thread's.
    const loopMicrosPerSpan = (loop.active * 1000) / spans;
    const cpuMicrosPerSpan = (cpu.user + cpu.system) / spans;
    return { rate, refused: result.refused, spans, loopMicrosPerSpan, cpuMicrosPerSpan };
  } finally {
    const stopping = Date.now();
    await service.stop();
    if (archive) console.log(`  stop (archive finishes its file): ${Date.now() - stopping} ms`);
  }
}

try {
  const rates: Record<'off' | 'on', number[]> = { off: [], on: [] };
  const loops: Record<'off' | 'on', number[]> = { off: [], on: [] };
  for (let round = 0; round < ROUNDS; round++) {
    for (const archive of [false, true]) {
      const { rate, refused, spans, loopMicrosPerSpan, cpuMicrosPerSpan } = await measure(archive, round);
      rates[archive ? 'on' : 'off'].push(rate);
      loops[archive ? 'on' : 'off'].push(loopMicrosPerSpan);
      console.log(
        `round ${round + 1} archive ${archive ? 'on ' : 'off'}: ${Math.round(rate).toLocaleString('en')} spans/s, event loop busy ${loopMicrosPerSpan.toFixed(2)} µs/span, process CPU ${cpuMicrosPerSpan.toFixed(2)} µs/span during the run (${spans} spans, refused ${JSON.stringify(refused)})`,
      );
    }
  }
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  const off = median(rates.off);
  const on = median(rates.on);
  console.log(
    `median: off ${Math.round(off).toLocaleString('en')} spans/s, on ${Math.round(on).toLocaleString('en')} spans/s (${(on / off).toFixed(2)}×); event loop busy ${median(loops.off).toFixed(2)} / ${median(loops.on).toFixed(2)} µs/span`,
  );
} finally {
  load.stop();
  rmSync(dir, { recursive: true, force: true });
}
