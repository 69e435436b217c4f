import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { exited, freePort, whenReady } from '../support/sdk-process.ts';
import { startCaptureReceiver } from './capture-receiver.ts';
import { children, labProcess, paymentsNodeEnv } from './lab-processes.ts';
import { readLedger } from './ledger.ts';
import { startNginx } from './nginx-proxy.ts';
import { type FailureSpec, SCENARIOS, type Scenario, scenarioNamed } from './scenarios.ts';
import { sleep } from './service-latency.ts';
import { startTcpRelay, type TcpRelay } from './tcp-relay.ts';
import { computeTruth, type FailureWindow, readRecording, serverSpanIds } from './truth.ts';

/**
 * Records the lab's scenarios: `node --import tsx test/lab/record.ts [scenario…]` (all when none
 * is named). Each one runs real processes on 127.0.0.1 — payments nodes with the OpenTelemetry
 * Node SDK, nginx in front of them, the checkout client — injects its failures, and writes
 * `recordings/<scenario>.jsonl.gz` (the spans as exported) and `<scenario>.truth.json` (from the
 * nodes' ledgers). Every process it started is killed at the end of a scenario, failed or not.
 */
const RECORDINGS = join(dirname(fileURLToPath(import.meta.url)), 'recordings');

/** The running nginx: stopped with SIGTERM, on which its master stops its workers (a SIGKILL would orphan them). */
let nginx: ChildProcess | undefined;

process.once('exit', () => {
  for (const child of children) child.kill('SIGKILL');
  nginx?.kill('SIGTERM');
});
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => process.exit(130));
}

interface LabNode {
  readonly name: string;
  readonly port: number;
  readonly env: Record<string, string>;
  process: ChildProcess;
}

async function recordScenario(scenario: Scenario): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), `keyscope-lab-${scenario.name}-`));
  const receiver = await startCaptureReceiver();
  const relays = new Map<string, TcpRelay>();
  const nodes: LabNode[] = [];
  try {
    for (const name of scenario.nodes) {
      const port = await freePort();
      const env = paymentsNodeEnv({
        name,
        port,
        ledgerPath: join(work, `ledger-${name}.jsonl`),
        ttlMillis: scenario.ttlMillis,
        otlpUrl: receiver.url,
      });
      nodes.push({ name, port, env, process: labProcess('payments-node.ts', env) });
    }
    await Promise.all(nodes.map((node) => whenReady(node.process, node.name)));
    const partitioned = new Set(scenario.failures.filter((f) => f.type === 'partition').map((f) => f.node));
    const upstreamPorts: number[] = [];
    for (const node of nodes) {
      if (!partitioned.has(node.name)) {
        upstreamPorts.push(node.port);
        continue;
      }
      const relay = await startTcpRelay(node.port);
      relays.set(node.name, relay);
      upstreamPorts.push(relay.port);
    }
    const proxyPort = await freePort();
    nginx = await startNginx(scenario.proxy, proxyPort, upstreamPorts, join(work, 'nginx'));

    const client = labProcess('checkout-traffic.ts', {
      LAB_OTLP_URL: receiver.url,
      LAB_RESOURCE: JSON.stringify({ 'service.name': 'checkout', 'service.instance.id': 'checkout-1' }),
      LAB_TRAFFIC: JSON.stringify({ proxyUrl: `http://127.0.0.1:${proxyPort}`, ...scenario.traffic }),
    });
    let summary = '';
    client.stdout?.on('data', (chunk: Buffer) => (summary += chunk.toString('utf8')));
    await whenReady(client, 'the checkout client');
    const startUnixMillis = Date.now();
    // In order, each no earlier than the end of the one before: two failovers, not one double outage.
    const windows: FailureWindow[] = [];
    for (const [index, failure] of scenario.failures.entries()) {
      windows.push(await inject(failure, `${failure.type}-${index + 1}`, startUnixMillis, nodes, relays));
    }
    const { traffic } = scenario;
    const clientLimitMillis =
      traffic.durationMillis +
      traffic.maxSends * (traffic.timeoutMillis + traffic.backoffBaseMillis * 2 ** traffic.maxSends) +
      30_000;
    const code = await within(exited(client), clientLimitMillis);
    if (code !== 0)
      throw new Error(
        `the checkout client ${code === 'late' ? 'did not finish in time' : `exited with ${code}`}`,
      );
    // The nodes still charging an abandoned request finish; then a clean stop exports their batches.
    await sleep(3000);
    for (const node of nodes) node.process.kill('SIGTERM');
    await within(Promise.all(nodes.map((node) => exited(node.process))), 15_000);

    const recording = join(RECORDINGS, `${scenario.name}.jsonl.gz`);
    receiver.save(recording);
    const ledger = scenario.nodes.flatMap((name) => readLedger(join(work, `ledger-${name}.jsonl`)));
    const truth = computeTruth({
      scenario: scenario.name,
      description: scenario.description,
      nodes: scenario.nodes,
      windows,
      ledger,
      recordedServerSpans: serverSpanIds(readRecording(recording)),
    });
    writeFileSync(join(RECORDINGS, `${scenario.name}.truth.json`), `${JSON.stringify(truth, null, 2)}\n`);
    const hidden = truth.lostFirstExecutions.filter((lost) => lost.ranAgain).length;
    console.log(
      `${scenario.name}: client ${summary.trim()}; ${receiver.requests} exports, ${truth.charges} charges of ${truth.keysCharged} keys, ${truth.duplicates.length} duplicates (${truth.duplicates.filter((d) => d.windowId !== null).length} in a failure window), ${truth.lostFirstExecutions.length} first executions unseen (${hidden} ran again)`,
    );
  } finally {
    // Whatever is left of this scenario: nodes, a client that did not finish, nginx.
    for (const child of children) child.kill('SIGKILL');
    if (nginx !== undefined) {
      nginx.kill('SIGTERM');
      await within(exited(nginx), 5000);
      nginx.kill('SIGKILL');
      nginx = undefined;
    }
    for (const relay of relays.values()) await relay.close();
    await receiver.close();
    rmSync(work, { recursive: true, force: true });
  }
}

/** `promise`, or `'late'` when it has not settled within `millis`; the timer never keeps the recorder alive. */
async function within<T>(promise: Promise<T>, millis: number): Promise<T | 'late'> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => {
    timer = setTimeout(() => resolve('late'), millis);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Waits for the failure's moment (at once if it has passed), applies it, and resolves with its window once it is over. */
async function inject(
  failure: FailureSpec,
  id: string,
  startUnixMillis: number,
  nodes: readonly LabNode[],
  relays: ReadonlyMap<string, TcpRelay>,
): Promise<FailureWindow> {
  const stallMillis = failure.type === 'kill' ? (failure.stallBeforeMillis ?? 0) : 0;
  await sleep(startUnixMillis + failure.atMillis - stallMillis - Date.now());
  const node = nodes.find((candidate) => candidate.name === failure.node);
  if (node === undefined) throw new Error(`failure on unknown node ${failure.node}`);
  const start = Date.now();
  switch (failure.type) {
    case 'kill': {
      if (stallMillis > 0) {
        node.process.send({ stall: { untilUnixMillis: start + stallMillis } });
        await sleep(stallMillis);
      }
      node.process.kill('SIGKILL');
      await exited(node.process);
      await sleep(failure.durationMillis);
      node.process = labProcess('payments-node.ts', node.env);
      await whenReady(node.process, node.name);
      break;
    }
    case 'brownout': {
      node.process.send({
        brownout: { addedMillis: failure.addedMillis ?? 0, untilUnixMillis: start + failure.durationMillis },
      });
      await sleep(failure.durationMillis);
      break;
    }
    case 'partition': {
      const relay = relays.get(node.name)!;
      relay.partition();
      await sleep(failure.durationMillis);
      relay.heal();
      break;
    }
  }
  return { id, type: failure.type, node: node.name, startUnixMillis: start, endUnixMillis: Date.now() };
}

const names = process.argv.slice(2);
const scenarios = names.length === 0 ? SCENARIOS : names.map(scenarioNamed);
for (const scenario of scenarios) await recordScenario(scenario);
