import { statSync } from 'node:fs';
import { join } from 'node:path';
import { resolveServeConfig } from '@keyscope/analyzer';
import { defaultMapping, extractAttempts } from '@keyscope/attempts';
import { createDetector } from '@keyscope/detector';
import { decodeTraces } from '@keyscope/otlp';
import type { BenchContext } from '../bench-context.ts';
import { fillHistory, type HistoryWindow, historyTemplate } from '../history-fill.ts';
import { median, pairedRatio, percentile } from '../measure.ts';
import { writePayloadFile } from '../payload-file.ts';
import type { Section } from '../section.ts';
import { ServiceProcess } from '../service-process-handle.ts';
import type { Row } from '../table.ts';
import type { EncodedPayloads } from '../workloads/encoded-payloads.ts';
import { FreshKeyPayloads } from '../workloads/fresh-key-payloads.ts';

const SECTION = 'history';
const RATE_TARGET_RATIO = 0.8;
const RSS_TARGET_BYTES = 1024 ** 3;
const LATENCY_TARGET_P99_MILLIS = 50;
/**
 * The share of a store's measured rate its paced passes send at: latency is a service's at the
 * load it runs at, and at full rate every request also waits for those queued before it.
 */
const PACED_LOAD_FRACTION = 0.5;
const RETENTION_TARGET_RATIO = 3;
/** Rows per `KeyscopeStore.purge` call: what the service's retention timer purges at a time (serve.ts). */
const RETENTION_CHUNK_ROWS = 5_000;
const HOUR = 60 * 60 * 1000;

/**
 * Persisted ingest on top of the history a long-running service keeps: one store per size in
 * `sizes.history.retainedAttempts` (the first 0: a new database), filled beforehand, outside every
 * timed region, through the store's own API (history-fill.ts) with attempts of distinct keys
 * spread over the retry horizon and the node activity of those seconds. Each store is served by
 * `keyscope serve`'s embedded service in a process of its own (service-process.ts), started once
 * and kept running across passes, as in production: every store holds the attempts of the passes
 * before too (the empty one, those alone). Every repetition sends one workload, the simulator's
 * benchmark scenario under keys no store has seen (fresh-key-payloads.ts), to each service in
 * turn (which goes first rotates), `connections` requests at a time, and measures:
 * - spans/s as the persisted-ingest section times them (first request to last answer, plus the
 *   CPU time of checkpointing what the pass left in the WAL);
 * - second execution → committed finding: each request that carries the second execution of a
 *   key (found beforehand by an in-memory detector fed payload by payload) is answered once the
 *   transaction holding its finding committed, so its send → answer time bounds it;
 * - the service process's peak resident set (VmHWM);
 * - the database file's bytes per attempt it holds, after a checkpoint;
 * and once the passes are done, retention: the oldest hours purged one at a time, back to back,
 * in the chunks the service's timer purges.
 */
export const historySection: Section = {
  name: SECTION,
  async run(context) {
    const { history } = context.sizes;
    const fresh = new FreshKeyPayloads(history.spans, context.sizes.seed);
    const original = fresh.original();
    const secondExecutions = secondExecutionRequests(original);
    const attemptsPerPass = historyTemplate(original).attempts;
    // The history ends a minute before the workload starts and reaches back `windowHours`, which
    // must stay inside the retry horizon: the services' clocks are at the workload's end, and
    // their retention timers must not purge any of it while the passes run.
    const horizonMillis = resolveServeConfig({}).detector.retryHorizonMillis;
    const toUnixMillis = firstStartUnixMillis(original) - 60_000;
    const window: HistoryWindow = { fromUnixMillis: toUnixMillis - history.windowHours * HOUR, toUnixMillis };
    if (original.endUnixMillis - window.fromUnixMillis >= horizonMillis) {
      throw new RangeError(
        `history.windowHours must leave the history inside the ${horizonMillis / HOUR} h retry horizon, received ${history.windowHours}`,
      );
    }
    const stores = fillStores(context, history.retainedAttempts, window, original);
    const services = stores.map(() => ServiceProcess.start());
    try {
      return await measure(context, {
        fresh,
        original,
        secondExecutions,
        attemptsPerPass,
        window,
        stores,
        services,
      });
    } finally {
      for (const service of services) service.stop();
    }
  },
};

/** A store of the section and what it held before the passes. */
interface HistoryStore {
  retained: number;
  dbPath: string;
  fillSeconds: number;
  keys: number;
}

interface Setup {
  fresh: FreshKeyPayloads;
  original: EncodedPayloads;
  secondExecutions: readonly number[];
  attemptsPerPass: number;
  window: HistoryWindow;
  stores: HistoryStore[];
  services: ServiceProcess[];
}

interface Pass {
  spansPerSecond: number;
  /** Spans per CPU-second of the service's process (its checkpoint thread included). */
  spansPerCpuSecond: number;
  p99Millis: number;
  peakRssBytes: number;
  diskBytesPerAttempt: number;
}

function fillStores(
  context: BenchContext,
  sizes: readonly number[],
  window: HistoryWindow,
  workload: EncodedPayloads,
): HistoryStore[] {
  const template = historyTemplate(workload);
  return sizes.map((retained, i) => {
    const dbPath = join(context.freshDir(`history-${i}`), 'keyscope.db');
    if (retained === 0) return { retained, dbPath, fillSeconds: 0, keys: 0 };
    process.stderr.write(` filling ${retained.toLocaleString('en-US')} attempts…`);
    const filled = fillHistory(dbPath, retained, window, template, context.sizes.seed + i);
    return { retained: filled.attempts, dbPath, fillSeconds: filled.seconds, keys: filled.keys };
  });
}

async function measure(context: BenchContext, setup: Setup): Promise<Row[]> {
  const { repetitions, history } = context.sizes;
  const { stores, services, original } = setup;
  const now = original.endUnixMillis;
  const loadGenerator = context.loadGenerator();
  const urls = await Promise.all(stores.map((store, i) => services[i]!.startService(store.dbPath, now)));
  const passes: Pass[][] = stores.map(() => []);
  let allAnswered = true;
  let passesRun = 0;
  for (let round = 0; round < history.warmupPasses + repetitions; round++) {
    const workload = setup.fresh.next();
    const file = join(context.scratchDir, 'history-payloads.bin');
    writePayloadFile(file, workload.bodies);
    await loadGenerator.load(file);
    for (let k = 0; k < stores.length; k++) {
      const i = (round + k) % stores.length;
      const store = stores[i]!;
      const service = services[i]!;
      await service.startMeasuring();
      const result = await loadGenerator.run(urls[i]!, workload.bodies.length, history.connections);
      const sample = await service.sample();
      allAnswered &&= result.ok === result.requests;
      // The sample checkpointed the WAL: the file holds everything committed.
      const dbBytes = statSync(store.dbPath).size;
      const held = store.retained + (passesRun + 1) * setup.attemptsPerPass;
      if (round < history.warmupPasses) continue;
      passes[i]!.push({
        spansPerSecond: workload.spans / (result.elapsedMillis / 1000 + sample.checkpointCpuSeconds),
        spansPerCpuSecond: workload.spans / (sample.cpuSeconds + sample.checkpointCpuSeconds),
        p99Millis: percentile(
          setup.secondExecutions.map((request) => result.latenciesMillis[request]!),
          99,
        ),
        peakRssBytes: sample.peakRssBytes,
        diskBytesPerAttempt: dbBytes / held,
      });
    }
    passesRun++;
  }

  const paced = await pacedPasses(context, setup, urls, passes);
  allAnswered &&= paced.allAnswered;
  const purges = await purgeHours(setup, repetitions);
  for (const service of services) await service.stopService();
  return rows(context, setup, passes, paced.p99s, purges, allAnswered);
}

/**
 * Per store, `repetitions` passes of fresh workloads sent at PACED_LOAD_FRACTION of the store's
 * median rate in the passes before (see Pacing in load-generator.ts), the stores taking turns:
 * the p99 of second execution → committed finding of each.
 */
async function pacedPasses(
  context: BenchContext,
  setup: Setup,
  urls: readonly string[],
  passes: readonly Pass[][],
): Promise<{ p99s: number[][]; allAnswered: boolean }> {
  const { repetitions, history } = context.sizes;
  const loadGenerator = context.loadGenerator();
  const p99s: number[][] = setup.stores.map(() => []);
  let allAnswered = true;
  for (let round = 0; round < repetitions; round++) {
    const workload = setup.fresh.next();
    const file = join(context.scratchDir, 'history-payloads.bin');
    writePayloadFile(file, workload.bodies);
    await loadGenerator.load(file);
    const spansPerRequest = workload.spans / workload.bodies.length;
    for (let k = 0; k < setup.stores.length; k++) {
      const i = (round + k) % setup.stores.length;
      const rate = PACED_LOAD_FRACTION * median(passes[i]!.map((pass) => pass.spansPerSecond));
      const result = await loadGenerator.run(urls[i]!, workload.bodies.length, history.connections, {
        intervalMillis: (1000 * spansPerRequest) / rate,
      });
      allAnswered &&= result.ok === result.requests;
      p99s[i]!.push(
        percentile(
          setup.secondExecutions.map((request) => result.latenciesMillis[request]!),
          99,
        ),
      );
    }
  }
  return { p99s, allAnswered };
}

/** Per store with history: seconds per purged hour and attempts purged per second, oldest hour first. */
interface HourPurges {
  seconds: number[];
  attemptsPerSecond: number[];
}

async function purgeHours(setup: Setup, hours: number): Promise<(HourPurges | undefined)[]> {
  const purges: (HourPurges | undefined)[] = [];
  for (let i = 0; i < setup.stores.length; i++) {
    if (setup.stores[i]!.retained === 0) {
      purges.push(undefined);
      continue;
    }
    const done: HourPurges = { seconds: [], attemptsPerSecond: [] };
    for (let hour = 1; hour <= hours; hour++) {
      const purged = await setup.services[i]!.purge(
        setup.window.fromUnixMillis + hour * HOUR,
        RETENTION_CHUNK_ROWS,
      );
      done.seconds.push(purged.seconds);
      done.attemptsPerSecond.push(purged.attemptsRemoved / purged.seconds);
    }
    purges.push(done);
  }
  return purges;
}

function rows(
  context: BenchContext,
  setup: Setup,
  passes: Pass[][],
  pacedP99s: number[][],
  purges: (HourPurges | undefined)[],
  allAnswered: boolean,
): Row[] {
  const { history, repetitions } = context.sizes;
  const { stores, original } = setup;
  const label = (store: HistoryStore) => `${store.retained.toLocaleString('en-US')} attempts retained`;
  const rates = passes.map((list) => list.map((pass) => pass.spansPerSecond));
  const attemptsPerSpan = setup.attemptsPerPass / original.spans;
  const largest = stores.length - 1;
  const result: Row[] = stores.map((store, i) => {
    const row: Row = {
      section: SECTION,
      measurement: `persisted ingest, ${label(store)}`,
      value: median(rates[i]!),
      unit: 'spans/s',
      samples: rates[i]!,
    };
    if (i > 0) row.ratio = { value: pairedRatio(rates[i]!, rates[0]!), against: label(stores[0]!) };
    const perCpu = passes[i]!.map((pass) => pass.spansPerCpuSecond);
    const cpuNote =
      `${Math.round(median(perCpu)).toLocaleString('en-US')} spans per CPU-second of the service's process` +
      (i > 0
        ? ` (${pairedRatio(
            perCpu,
            passes[0]!.map((pass) => pass.spansPerCpuSecond),
          ).toFixed(3)}× the empty store's, paired)`
        : '');
    if (i === largest && i > 0) row.target = { comparison: '>=', bound: RATE_TARGET_RATIO, on: 'ratio' };
    row.note = cpuNote;
    if (i === 0) {
      row.check = { ok: allAnswered, what: 'every request answered 200' };
      row.note =
        `${cpuNote}. The simulator's benchmark scenario, ${original.spans} spans (${setup.attemptsPerPass} attempts) per pass under keys ` +
        `no store has seen, ${history.connections} concurrent requests to startServe() in a process of its own per ` +
        `store, its clock at the workload's end; ${history.warmupPasses} untimed passes, then ${repetitions} ` +
        'repetitions, the stores taking turns. The empty store is a new database; the others were filled ' +
        'beforehand through KeyscopeStore (transaction, attemptLog.append, recordActivity) with whole keys of the ' +
        "workload's shape under fresh UUIDs spread evenly over " +
        `${hoursOf(setup.window)} h of the retry horizon, and the node activity of every second of it: ` +
        stores
          .filter((s) => s.retained > 0)
          .map(
            (s) =>
              `${s.retained.toLocaleString('en-US')} attempts (${s.keys.toLocaleString('en-US')} keys) in ${s.fillSeconds.toFixed(0)} s`,
          )
          .join(', ') +
        '. Every service is started once and kept running, each pass adding its attempts. spans / (first request ' +
        'to last answer + CPU time of checkpointing what the pass left in the WAL)';
    }
    return row;
  });
  stores.forEach((store, i) => {
    const p99s = passes[i]!.map((pass) => pass.p99Millis);
    result.push({
      section: SECTION,
      measurement: `second execution → committed finding p99, ${label(store)}`,
      value: median(p99s),
      unit: 'ms',
      samples: p99s,
      ...(i === 0
        ? {
            note:
              `send → answer of the ${setup.secondExecutions.length} requests per pass that carry a key's second execution ` +
              '(an in-memory detector fed the payloads in order reports a new finding on them): the answer follows the commit ' +
              `of the transaction holding the finding; at full rate, ${history.connections} requests in flight, so it includes ` +
              'the wait for the requests queued before it and for the group commit. p99 per pass, median of the passes',
          }
        : {}),
    });
  });
  stores.forEach((store, i) => {
    const p99s = pacedP99s[i]!;
    result.push({
      section: SECTION,
      measurement: `second execution → committed finding p99 at half load, ${label(store)}`,
      value: median(p99s),
      unit: 'ms',
      target: { comparison: '<=', bound: LATENCY_TARGET_P99_MILLIS },
      samples: p99s,
      ...(i === 0
        ? {
            note:
              `the same requests, in ${repetitions} more passes per store sent at a fixed rate of ${PACED_LOAD_FRACTION}× the ` +
              "store's median rate above (an open loop, at most " +
              `${history.connections} in flight), each request's time counted from when it was due`,
          }
        : {}),
    });
  });
  stores.forEach((store, i) => {
    const rss = passes[i]!.map((pass) => pass.peakRssBytes / 2 ** 20);
    result.push({
      section: SECTION,
      measurement: `service peak RSS, ${label(store)}`,
      value: median(rss),
      unit: 'MiB',
      ...(i === largest ? { target: { comparison: '<=' as const, bound: RSS_TARGET_BYTES / 2 ** 20 } } : {}),
      samples: rss,
      ...(i === 0
        ? {
            note:
              "VmHWM of the service's process after each pass: the largest resident set since it started, its start " +
              'on the stored history (the node activity it restores) included',
          }
        : {}),
    });
  });
  stores.forEach((store, i) => {
    const bytes = passes[i]!.map((pass) => pass.diskBytesPerAttempt);
    result.push({
      section: SECTION,
      measurement: `database bytes per attempt, ${label(store)}`,
      value: median(bytes),
      unit: 'bytes',
      samples: bytes,
      ...(i === 0
        ? {
            note:
              "the database file's size after each pass (checkpointed; the WAL file left out) over the attempts it holds: " +
              'attempt batches, their key index, node activity, findings and incidents; the empty store holds its passes alone',
          }
        : {}),
    });
  });
  stores.forEach((store, i) => {
    const purged = purges[i];
    if (purged === undefined) return;
    const ingestAttemptsPerSecond = median(rates[i]!) * attemptsPerSpan;
    result.push({
      section: SECTION,
      measurement: `retention: purge an hour of history, ${label(store)}`,
      value: median(purged.seconds),
      unit: 's',
      ratio: {
        value: median(purged.attemptsPerSecond) / ingestAttemptsPerSecond,
        against: 'ingest attempts/s at this history',
      },
      target: { comparison: '>=', bound: RETENTION_TARGET_RATIO, on: 'ratio' },
      samples: purged.seconds,
      note:
        `the ${repetitions} oldest hours (${Math.round(store.retained / hoursOf(setup.window)).toLocaleString('en-US')} ` +
        `attempts each) purged one after another, back to back, ${RETENTION_CHUNK_ROWS} rows per KeyscopeStore.purge ` +
        `call (one transaction) as the service's retention timer purges: ${Math.round(median(purged.attemptsPerSecond)).toLocaleString('en-US')} ` +
        `attempts/s, against ${Math.round(ingestAttemptsPerSecond).toLocaleString('en-US')} attempts/s ingested at this history ` +
        `(${attemptsPerSpan.toFixed(3)} attempts per span)`,
    });
  });
  return result;
}

function hoursOf(window: HistoryWindow): number {
  return Math.round(((window.toUnixMillis - window.fromUnixMillis) / HOUR) * 10) / 10;
}

/**
 * The requests (payload indexes) that deliver a key's second execution: those on which an
 * in-memory detector fed the payloads in order reports a finding it had not reported before.
 */
function secondExecutionRequests(workload: EncodedPayloads): number[] {
  const mapping = defaultMapping();
  const detector = createDetector();
  const reported = new Set<string>();
  const requests: number[] = [];
  workload.bodies.forEach((body, i) => {
    const changes = detector.ingest(extractAttempts(decodeTraces(body), mapping));
    let first = false;
    for (const finding of changes.findings) {
      if (!reported.has(finding.id)) {
        reported.add(finding.id);
        first = true;
      }
    }
    if (first) requests.push(i);
  });
  return requests;
}

function firstStartUnixMillis(workload: EncodedPayloads): number {
  let first = Number.POSITIVE_INFINITY;
  for (const body of workload.bodies) {
    for (const span of decodeTraces(body)) {
      if (span.startTimeUnixMillis < first) first = span.startTimeUnixMillis;
    }
  }
  return first;
}
