import type { AddressInfo } from 'node:net';
import { connect, createServer, type Server, type Socket } from 'node:net';

/**
 * A TCP relay on 127.0.0.1 between the proxy and one node: the network path a partition cuts.
 * While `partitioned`, bytes in either direction are dropped (connections stay open, as when
 * packets vanish); connections that lost bytes are reset when it heals.
 */
export interface TcpRelay {
  readonly port: number;
  partition(): void;
  heal(): void;
  close(): Promise<void>;
}

export async function startTcpRelay(targetPort: number): Promise<TcpRelay> {
  let partitioned = false;
  const open = new Set<Socket>();
  const damaged = new Set<Socket>();
  const server: Server = createServer((inbound) => {
    const outbound = connect(targetPort, '127.0.0.1');
    for (const [from, to] of [
      [inbound, outbound],
      [outbound, inbound],
    ] as const) {
      open.add(from);
      from.on('data', (chunk) => {
        if (partitioned) damaged.add(inbound);
        else to.write(chunk);
      });
      from.on('error', () => to.destroy());
      from.on('close', () => {
        open.delete(from);
        damaged.delete(from);
        to.destroy();
      });
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    partition() {
      partitioned = true;
    },
    heal() {
      partitioned = false;
      for (const socket of damaged) socket.resetAndDestroy();
      damaged.clear();
    },
    close: () =>
      new Promise((resolve) => {
        for (const socket of open) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
