import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { sleep } from './service-latency.ts';

/** How the proxy spreads requests over the nodes. */
export type Balance = 'round_robin' | 'key_hash';

export interface ProxyPlan {
  readonly kind: 'nginx';
  readonly balance: Balance;
  /**
   * Re-send a POST the node already received to the next node on an error or a read timeout
   * (`proxy_next_upstream error timeout non_idempotent`); nginx's default re-sends only requests
   * that never reached a node.
   */
  readonly retryPosts: boolean;
  /** nginx's `proxy_read_timeout`: how long it waits for a node's answer. */
  readonly readTimeoutMillis: number;
  /**
   * nginx's `max_fails`: failed tries (a refused connection, a read timeout) after which a node is
   * left out for 3 s; 0 never leaves one out.
   */
  readonly maxFails: number;
}

export function nginxConfig(
  plan: ProxyPlan,
  listenPort: number,
  upstreamPorts: readonly number[],
  prefix: string,
): string {
  const servers = upstreamPorts.map(
    (port) => `    server 127.0.0.1:${port} max_fails=${plan.maxFails} fail_timeout=3s;`,
  );
  return `${process.getuid?.() === 0 ? 'user root;\n' : ''}worker_processes 1;
daemon off;
pid ${join(prefix, 'nginx.pid')};
error_log ${join(prefix, 'error.log')} warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path ${join(prefix, 'body')};
  proxy_temp_path ${join(prefix, 'proxy')};
  fastcgi_temp_path ${join(prefix, 'fastcgi')};
  uwsgi_temp_path ${join(prefix, 'uwsgi')};
  scgi_temp_path ${join(prefix, 'scgi')};
  upstream payments {
${plan.balance === 'key_hash' ? '    hash $http_idempotency_key consistent;\n' : ''}${servers.join('\n')}
  }
  server {
    listen 127.0.0.1:${listenPort};
    location / {
      proxy_pass http://payments;
      proxy_connect_timeout 1s;
      proxy_read_timeout ${plan.readTimeoutMillis}ms;
      proxy_next_upstream ${plan.retryPosts ? 'error timeout non_idempotent' : 'error timeout'};
      proxy_next_upstream_tries 2;
    }
  }
}
`;
}

/** nginx in the foreground with its own prefix folder, listening on 127.0.0.1:`listenPort`. */
export async function startNginx(
  plan: ProxyPlan,
  listenPort: number,
  upstreamPorts: readonly number[],
  prefix: string,
): Promise<ChildProcess> {
  mkdirSync(prefix, { recursive: true });
  const config = join(prefix, 'nginx.conf');
  writeFileSync(config, nginxConfig(plan, listenPort, upstreamPorts, prefix));
  const nginx = spawn('nginx', ['-p', prefix, '-c', config, '-e', join(prefix, 'error.log')], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  try {
    await waitForPort(listenPort, 10_000);
  } catch (error) {
    nginx.kill('SIGTERM');
    throw error;
  }
  return nginx;
}

export async function waitForPort(port: number, timeoutMillis: number): Promise<void> {
  const deadline = Date.now() + timeoutMillis;
  while (Date.now() < deadline) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (open) return;
    await sleep(50);
  }
  throw new Error(`nothing listened on 127.0.0.1:${port} within ${timeoutMillis} ms`);
}
