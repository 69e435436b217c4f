import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Balance } from './nginx-proxy.ts';
import { waitForPort } from './nginx-proxy.ts';

/** HAProxy in front of the nodes, as a team that runs it instead of nginx configures it. */
export interface HaproxyPlan {
  readonly kind: 'haproxy';
  /** `balance roundrobin`, or `balance hdr(idempotency-key)` with `hash-type consistent`. */
  readonly balance: Balance;
  /** `timeout connect` and `timeout server`: how long it waits for a connection, and for a node's answer. */
  readonly connectTimeoutMillis: number;
  readonly serverTimeoutMillis: number;
  /** `retries`: new connection attempts after one failed; with `redispatch`, the last goes to another node. */
  readonly retries: number;
  readonly redispatch: boolean;
  /** `option httpchk GET <path>`, every `intervalMillis`: a node is down after `fall` failures, up after `rise` successes. */
  readonly healthCheck: {
    readonly path: string;
    readonly intervalMillis: number;
    readonly fall: number;
    readonly rise: number;
  };
}

/** One line of HAProxy's log per request, as `haproxyConfig`'s log format writes it. */
export interface HaproxyLogLine {
  /** When HAProxy logged the request, at its end; Unix milliseconds. */
  readonly endedUnixMillis: number;
  /** The node's `service.instance.id`, or `<NOSRV>` when it reached none. */
  readonly server: string;
  /** The status HAProxy sent the client; -1 when it sent none. */
  readonly status: number;
  /** HAProxy's termination state (`----` a normal end, `SH--` the node closed before its headers, `CD--` the client left). */
  readonly termination: string;
  /** Connection retries; `+` before it when HAProxy redispatched the request to another node. */
  readonly retries: string;
  /** Milliseconds to connect to the node and for its response headers; -1 when it never got there. */
  readonly connectMillis: number;
  readonly responseMillis: number;
  readonly totalMillis: number;
  readonly key: string;
}

export function haproxyConfig(
  plan: HaproxyPlan,
  listenPort: number,
  upstreams: readonly { readonly name: string; readonly port: number }[],
  folder: string,
): string {
  const { healthCheck } = plan;
  const servers = upstreams.map((upstream) => `  server ${upstream.name} 127.0.0.1:${upstream.port} check`);
  // Every field a number or a quoted string: one JSON object per request.
  const logFormat =
    '{"endedUnixMillis":%[date(0,ms)],"server":"%s","status":%ST,"termination":"%tsc","retries":"%rc",' +
    '"connectMillis":%Tc,"responseMillis":%Tr,"totalMillis":%Ta,"key":"%[capture.req.hdr(0)]"}';
  return `global
  pidfile ${join(folder, 'haproxy.pid')}
  log stdout format raw local0 info
  maxconn 2048

defaults
  mode http
  log global
  log-format '${logFormat}'
  timeout connect ${plan.connectTimeoutMillis}ms
  timeout server ${plan.serverTimeoutMillis}ms
  timeout client 60s
  timeout http-keep-alive 75s
  retries ${plan.retries}
${plan.redispatch ? '  option redispatch\n' : ''}
frontend checkout
  bind 127.0.0.1:${listenPort}
  http-request capture req.hdr(idempotency-key) len 64
  default_backend payments

backend payments
${plan.balance === 'key_hash' ? '  balance hdr(idempotency-key)\n  hash-type consistent\n' : '  balance roundrobin\n'}  option httpchk GET ${healthCheck.path}
  http-check expect status 200
  default-server inter ${healthCheck.intervalMillis}ms fall ${healthCheck.fall} rise ${healthCheck.rise}
${servers.join('\n')}
`;
}

/**
 * HAProxy in the foreground (`-db`), one process, listening on 127.0.0.1:`listenPort`, its config
 * and its log (`haproxy.log`, one JSON object per request) in `folder`. Stopped with SIGTERM.
 */
export async function startHaproxy(
  plan: HaproxyPlan,
  listenPort: number,
  upstreams: readonly { readonly name: string; readonly port: number }[],
  folder: string,
): Promise<ChildProcess> {
  mkdirSync(folder, { recursive: true });
  const config = join(folder, 'haproxy.cfg');
  writeFileSync(config, haproxyConfig(plan, listenPort, upstreams, folder));
  const log = openSync(join(folder, 'haproxy.log'), 'a');
  const haproxy = spawn('haproxy', ['-db', '-f', config], { stdio: ['ignore', log, 'inherit'] });
  closeSync(log);
  try {
    await waitForPort(listenPort, 10_000);
  } catch (error) {
    haproxy.kill('SIGTERM');
    throw error;
  }
  return haproxy;
}

/** The request lines of HAProxy's log in `folder`; its own notices (a server going down) are not JSON and are left out. */
export function readHaproxyLog(folder: string): HaproxyLogLine[] {
  const path = join(folder, 'haproxy.log');
  if (!existsSync(path)) return [];
  const lines: HaproxyLogLine[] = [];
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      lines.push(JSON.parse(line) as HaproxyLogLine);
    } catch {
      // A line cut short by the stop.
    }
  }
  return lines;
}

/** HAProxy's notices in its log: servers going down and up, with the reason. */
export function haproxyNotices(folder: string): string[] {
  const path = join(folder, 'haproxy.log');
  if (!existsSync(path)) return [];
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => line !== '' && !line.startsWith('{'));
}
