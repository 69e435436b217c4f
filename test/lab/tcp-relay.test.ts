import { once } from 'node:events';
import { type AddressInfo, connect, createServer, type Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { startTcpRelay } from './tcp-relay.ts';

/** An echo server on 127.0.0.1 and a relay in front of it. */
async function echoBehindRelay() {
  const server = createServer((socket) => {
    // The relay's reset of a damaged connection may reach this end as ECONNRESET.
    socket.on('error', () => {});
    socket.pipe(socket);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const relay = await startTcpRelay((server.address() as AddressInfo).port);
  return {
    relay,
    async close() {
      await relay.close();
      server.close();
    },
  };
}

async function connected(port: number): Promise<Socket> {
  const socket = connect(port, '127.0.0.1');
  await once(socket, 'connect');
  return socket;
}

function echoWithin(socket: Socket, text: string, millis: number): Promise<string | 'nothing'> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve('nothing'), millis);
    socket.once('data', (chunk) => {
      clearTimeout(timer);
      resolve(chunk.toString('utf8'));
    });
    socket.write(text);
  });
}

describe('the TCP relay', () => {
  it('forwards both ways, drops every byte while partitioned, and resets the connections that lost bytes when healed', async () => {
    const { relay, close } = await echoBehindRelay();
    try {
      const socket = await connected(relay.port);
      expect(await echoWithin(socket, 'before', 2000)).toBe('before');

      relay.partition();
      expect(await echoWithin(socket, 'during', 300)).toBe('nothing');

      const reset = new Promise((resolve) => socket.once('error', resolve));
      relay.heal();
      expect(await reset).toMatchObject({ code: 'ECONNRESET' });

      const fresh = await connected(relay.port);
      expect(await echoWithin(fresh, 'after', 2000)).toBe('after');
      fresh.destroy();
    } finally {
      await close();
    }
  });
});
