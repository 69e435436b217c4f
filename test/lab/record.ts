import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { exited, freePort, whenReady } from '../support/sdk-process.ts';
import { startCaptureReceiver } from './capture-receiver.ts';
import type { ClientSend } from './checkout-traffic.ts';
import { haproxyNotices, readHaproxyLog, startHaproxy } from './haproxy-proxy.ts';
import { children, labProcess, paymentsNodeEnv } from './lab-processes.ts';
import { readAnswers, readLedger } from './ledger.ts';
import { startNginx } from './nginx-proxy.ts';
import { type FailureSpec, SCENARIOS, type Scenario, scenarioNamed } from './scenarios.ts';
import { sleep } from './service-latency.ts';
import { startTcpRelay, type TcpRelay } from './tcp-relay.ts';
import { computeTruth, decisionSpanIds, type FailureWindow, readRecording, serverSpanIds } from './truth.ts';

/**
 * Records the lab's scenarios: `node --import tsx test/lab/record.ts [scenario…]` (all when none
 * is named). Each one runs real processes on 127.0.0.1 — payments nodes with the OpenTelemetry
 * Node SDK, nginx or HAProxy in front of them, the checkout client — injects its failures, and
 * writes `recordings/<scenario>.jsonl.gz` (the spans as exported) and `<scenario>.truth.json`
 * (from the nodes' ledgers and the client's log of its sends). Every process it started is killed
 * at the end of a scenario, failed or not.
 */
const RECORDINGS = join(dirname(fileURLToPath(import.meta.url)), 'recordings');

/**
 * The running proxy: stopped with SIGTERM, on which nginx's master stops its workers (a SIGKILL
 * would orphan them) and HAProxy, one process in the foreground, exits.
 */
let proxy: ChildProcess | undefined;

process.once('exit', () => {
  for (const child of children) child.kill('SIGKILL');
  proxy?.kill('SIGTERM');
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
        storeScope: scenario.storeScope,
        // One file and one store id for every node of the cluster (they all run in cluster `lab`).
        storePath: join(work, 'dedup-store.sqlite'),
        storeId: scenario.storeScope === 'cluster' ? 'payments/cluster:lab' : '',
        decisionSpan: scenario.decisionSpan,
      });
      nodes.push({ name, port, env, process: labProcess('payments-node.ts', env) });
    }
    await Promise.all(nodes.map((node) => whenReady(node.process, node.name)));
    // Each port is the node's: a port freePort() handed out is free until the node binds it, not after.
    for (const node of nodes) await expectNodeAt(node);
    const partitioned = new Set(scenario.failures.filter((f) => f.type === 'partition').map((f) => f.node));
    const upstreams: { name: string; port: number }[] = [];
    for (const node of nodes) {
      if (!partitioned.has(node.name)) {
        upstreams.push({ name: node.name, port: node.port });
        continue;
      }
      const relay = await startTcpRelay(node.port);
      relays.set(node.name, relay);
      upstreams.push({ name: node.name, port: relay.port });
    }
    const proxyPort = await freePort();
    const proxyFolder = join(work, scenario.proxy.kind);
    proxy =
      scenario.proxy.kind === 'nginx'
        ? await startNginx(
            scenario.proxy,
            proxyPort,
            upstreams.map((upstream) => upstream.port),
            proxyFolder,
          )
        : await startHaproxy(scenario.proxy, proxyPort, upstreams, proxyFolder);

    const clientLog = join(work, 'client-sends.jsonl');
    const client = labProcess('checkout-traffic.ts', {
      LAB_CLIENT_LOG: clientLog,
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
    const ledgers = scenario.nodes.map((name) => join(work, `ledger-${name}.jsonl`));
    // A node the proxy never reached (it took it for down from the start) is no scenario of ours.
    for (const [index, path] of ledgers.entries())
      if (readLedger(path).length === 0) throw new Error(`${scenario.nodes[index]} charged nothing`);
    const spans = readRecording(recording);
    const truth = computeTruth({
      scenario: scenario.name,
      description: scenario.description,
      nodes: scenario.nodes,
      setup: {
        proxy: scenario.proxy.kind,
        decisionSpan: scenario.decisionSpan,
        storeScope: scenario.storeScope,
        ttlMillis: scenario.ttlMillis,
        clientTimeoutMillis: traffic.timeoutMillis,
        clientMaxSends: traffic.maxSends,
      },
      windows,
      ledger: ledgers.flatMap(readLedger),
      answers: ledgers.flatMap(readAnswers),
      sends: readFileSync(clientLog, 'utf8')
        .split('\n')
        .filter((line) => line !== '')
        .map((line) => JSON.parse(line) as ClientSend),
      recordedServerSpans: serverSpanIds(spans),
      recordedDecisionSpans: decisionSpanIds(spans),
    });
    writeFileSync(join(RECORDINGS, `${scenario.name}.truth.json`), `${JSON.stringify(truth, null, 2)}\n`);
    const hidden = truth.lostFirstExecutions.filter((lost) => lost.ranAgain).length;
    console.log(
      `${scenario.name}: client ${summary.trim()}; ${receiver.requests} exports, ${truth.charges} charges of ${truth.keysCharged} keys, ${truth.duplicates.length} duplicates (${truth.duplicates.filter((d) => d.windowId !== null).length} in a failure window), ${truth.lostFirstExecutions.length} first executions unseen (${hidden} ran again)`,
    );
    if (scenario.proxy.kind === 'haproxy') console.log(haproxySummary(proxyFolder));
  } finally {
    // Whatever is left of this scenario: nodes, a client that did not finish, the proxy.
    for (const child of children) child.kill('SIGKILL');
    if (proxy !== undefined) {
      proxy.kill('SIGTERM');
      await within(exited(proxy), 5000);
      proxy.kill('SIGKILL');
      proxy = undefined;
    }
    for (const relay of relays.values()) await relay.close();
    await receiver.close();
    // LAB_KEEP_WORK=1 keeps the ledgers, the client log and the proxy's log for a look.
    if (process.env.LAB_KEEP_WORK === '1') console.log(`${scenario.name}: kept ${work}`);
    else rmSync(work, { recursive: true, force: true });
  }
}

/** Throws unless the node answers its health check at its port, under its own name. */
async function expectNodeAt(node: LabNode): Promise<void> {
  const response = await fetch(`http://127.0.0.1:${node.port}/healthz`);
  const name = response.headers.get('x-lab-node');
  await response.text();
  if (response.status !== 200 || name !== node.name)
    throw new Error(
      `127.0.0.1:${node.port} answered ${response.status} from ${name ?? 'no lab node'}, not ${node.name}`,
    );
}

/**
 * What HAProxy did with the requests that did not end normally (a 2xx, or a node's 409, with
 * termination state `----`): counted by node, status, termination state and retries; then its
 * notices (servers going down and up).
 */
function haproxySummary(folder: string): string {
  const counts = new Map<string, number>();
  for (const line of readHaproxyLog(folder)) {
    if (line.termination === '----' && line.status < 500) continue;
    const what = `${line.server} status ${line.status} ${line.termination} retries ${line.retries}`;
    counts.set(what, (counts.get(what) ?? 0) + 1);
  }
  const requests = [...counts].sort().map(([what, count]) => `  ${count} × ${what}`);
  return ['haproxy, requests that did not end normally:', ...requests, ...haproxyNotices(folder)].join('\n');
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
      await expectNodeAt(node);
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
