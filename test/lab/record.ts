import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startCaptureReceiver } from './capture-receiver.ts';
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
const HERE = dirname(fileURLToPath(import.meta.url));
const REPO = join(HERE, '..', '..');
const RECORDINGS = join(HERE, 'recordings');
/** A node or the client that has not started in this long is a failed recording. */
const START_TIMEOUT_MILLIS = 60_000;

const children = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of children) child.kill('SIGKILL');
});
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => process.exit(130));
}

function labProcess(script: string, env: Record<string, string>): ChildProcess {
  const child = spawn(
    process.execPath,
    [
      '--conditions=@keyscope/source',
      '--import',
      'tsx',
      '--import',
      join(HERE, 'instrumentation.ts'),
      join(HERE, script),
    ],
    {
      cwd: REPO,
      env: { ...process.env, OTEL_SEMCONV_STABILITY_OPT_IN: 'http', ...env },
      stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
    },
  );
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

function whenReady(child: ChildProcess, what: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${what} did not start in ${START_TIMEOUT_MILLIS} ms`)),
      START_TIMEOUT_MILLIS,
    );
    child.on('message', (message: { ready?: boolean }) => {
      if (message.ready) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${what} exited with ${code} before it was ready`));
    });
  });
}

function exited(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
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
  let nginx: ChildProcess | undefined;
  try {
    for (const name of scenario.nodes) {
      const port = await freePort();
      const env = {
        LAB_PORT: String(port),
        LAB_LEDGER: join(work, `ledger-${name}.jsonl`),
        LAB_TTL_MILLIS: String(scenario.ttlMillis),
        LAB_OTLP_URL: receiver.url,
        LAB_RESOURCE: JSON.stringify({
          'service.name': 'payments',
          'service.instance.id': name,
          'k8s.cluster.name': 'lab',
          'cloud.region': 'local',
        }),
      };
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
    children.add(nginx);

    const startUnixMillis = Date.now();
    const client = labProcess('checkout-traffic.ts', {
      LAB_OTLP_URL: receiver.url,
      LAB_RESOURCE: JSON.stringify({ 'service.name': 'checkout', 'service.instance.id': 'checkout-1' }),
      LAB_TRAFFIC: JSON.stringify({ proxyUrl: `http://127.0.0.1:${proxyPort}`, ...scenario.traffic }),
    });
    let summary = '';
    client.stdout?.on('data', (chunk: Buffer) => (summary += chunk.toString('utf8')));
    const windows = await Promise.all(
      scenario.failures.map((failure, index) =>
        inject(failure, `${failure.type}-${index + 1}`, startUnixMillis, nodes, relays),
      ),
    );
    const { traffic } = scenario;
    const clientLimitMillis =
      traffic.durationMillis +
      traffic.maxSends * (traffic.timeoutMillis + traffic.backoffBaseMillis * 2 ** traffic.maxSends) +
      30_000;
    const code = await Promise.race([exited(client), sleep(clientLimitMillis).then(() => 'late' as const)]);
    if (code !== 0)
      throw new Error(
        `the checkout client ${code === 'late' ? 'did not finish in time' : `exited with ${code}`}`,
      );
    // The nodes still charging an abandoned request finish; then a clean stop exports their batches.
    await sleep(3000);
    for (const node of nodes) node.process.kill('SIGTERM');
    await Promise.race([Promise.all(nodes.map((node) => exited(node.process))), sleep(15_000)]);

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
    for (const node of nodes) node.process.kill('SIGKILL');
    nginx?.kill('SIGKILL');
    for (const relay of relays.values()) await relay.close();
    await receiver.close();
    rmSync(work, { recursive: true, force: true });
  }
}

/** Waits for the failure's moment, applies it, and resolves with its window once it is over. */
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
