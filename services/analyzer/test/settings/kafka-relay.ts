import { createConnection, createServer, type Server, type Socket } from 'node:net';

/** Kafka API keys the relay reads or answers for. */
const METADATA = 3;
const API_VERSIONS = 18;
export const CREATE_TOPICS = 19;

/** One request a client sent through the relay: its header, and its body after the header. */
export interface RelayedRequest {
  readonly apiKey: number;
  readonly apiVersion: number;
  readonly clientId: string | null;
  readonly body: Buffer;
}

export interface KafkaRelay {
  /** `127.0.0.1:<port>`: give it to the client as its bootstrap broker. */
  readonly address: string;
  /** Every request relayed so far, in the order each connection sent them. */
  readonly requests: RelayedRequest[];
  stop(): Promise<void>;
}

/**
 * A TCP relay in front of a one-broker Kafka cluster that records every request a client sends.
 * Metadata answers advertise the relay instead of the broker (so every later connection of the
 * client passes through it too) and name that broker as the controller. With `offerCreateTopics`,
 * ApiVersions answers also offer CreateTopics (v0–v3), which librdkafka's mock broker lacks, so a
 * client that creates topics sends its request where the relay can read it; the relay answers
 * that request by closing the connection, as a broker without the API would.
 */
export async function startKafkaRelay(
  broker: string,
  options: { offerCreateTopics?: boolean } = {},
): Promise<KafkaRelay> {
  const [brokerHost, brokerPort] = splitHostPort(broker);
  const requests: RelayedRequest[] = [];
  const sockets = new Set<Socket>();
  let relayPort = 0;

  const server: Server = createServer((client) => {
    const upstream = createConnection({ host: brokerHost, port: brokerPort });
    sockets.add(client).add(upstream);
    const pending = new Map<number, { apiKey: number; apiVersion: number }>();
    const close = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('error', close).on('close', close);
    upstream.on('error', close).on('close', close);

    onFrames(client, (frame) => {
      const request = parseRequest(frame);
      requests.push(request);
      if (request.apiKey === CREATE_TOPICS && options.offerCreateTopics === true) {
        close();
        return;
      }
      pending.set(frame.readInt32BE(4), { apiKey: request.apiKey, apiVersion: request.apiVersion });
      upstream.write(withSize(frame));
    });
    onFrames(upstream, (frame) => {
      const correlationId = frame.readInt32BE(0);
      const request = pending.get(correlationId);
      pending.delete(correlationId);
      let answer = frame;
      if (request?.apiKey === METADATA) answer = advertiseRelay(frame, request.apiVersion, relayPort);
      if (request?.apiKey === API_VERSIONS && options.offerCreateTopics === true && request.apiVersion <= 2) {
        answer = offerCreateTopics(frame, request.apiVersion);
      }
      client.write(withSize(answer));
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  relayPort = (server.address() as { port: number }).port;

  return {
    address: `127.0.0.1:${relayPort}`,
    requests,
    async stop() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The string at `offset` (int16 length, -1 for null) and the offset after it. */
export function readString(buffer: Buffer, offset: number): [string | null, number] {
  const length = buffer.readInt16BE(offset);
  if (length < 0) return [null, offset + 2];
  return [buffer.toString('utf8', offset + 2, offset + 2 + length), offset + 2 + length];
}

function splitHostPort(address: string): [string, number] {
  const colon = address.lastIndexOf(':');
  return [address.slice(0, colon), Number(address.slice(colon + 1))];
}

/** Calls `onFrame` with each size-prefixed frame `socket` sends, without its size. */
function onFrames(socket: Socket, onFrame: (frame: Buffer) => void): void {
  let buffered = Buffer.alloc(0);
  socket.on('data', (chunk: Buffer) => {
    buffered = Buffer.concat([buffered, chunk]);
    while (buffered.length >= 4 && buffered.length >= 4 + buffered.readInt32BE(0)) {
      const size = buffered.readInt32BE(0);
      const frame = buffered.subarray(4, 4 + size);
      buffered = buffered.subarray(4 + size);
      onFrame(Buffer.from(frame));
    }
  });
}

function withSize(frame: Buffer): Buffer {
  const size = Buffer.alloc(4);
  size.writeInt32BE(frame.length);
  return Buffer.concat([size, frame]);
}

/** A request header (v1: api key, version, correlation id, client id) and the body after it. */
function parseRequest(frame: Buffer): RelayedRequest {
  const [clientId, bodyStart] = readString(frame, 8);
  return {
    apiKey: frame.readInt16BE(0),
    apiVersion: frame.readInt16BE(2),
    clientId,
    body: frame.subarray(bodyStart),
  };
}

/**
 * A Metadata answer (v0–v6) whose brokers listen on `port` (the relay's; their host is already
 * loopback) and whose controller (v1+) is one of them.
 */
function advertiseRelay(frame: Buffer, version: number, port: number): Buffer {
  const answer = Buffer.from(frame);
  let offset = 4 + (version >= 3 ? 4 : 0);
  const brokers = answer.readInt32BE(offset);
  offset += 4;
  const ids: number[] = [];
  for (let index = 0; index < brokers; index++) {
    ids.push(answer.readInt32BE(offset));
    offset = readString(answer, offset + 4)[1];
    answer.writeInt32BE(port, offset);
    offset += 4;
    if (version >= 1) offset = readString(answer, offset)[1];
  }
  if (version >= 2) offset = readString(answer, offset)[1];
  if (version >= 1 && !ids.includes(answer.readInt32BE(offset))) answer.writeInt32BE(ids[0]!, offset);
  return answer;
}

/** An ApiVersions answer (v0–v2) that also offers CreateTopics v0–v3. */
function offerCreateTopics(frame: Buffer, version: number): Buffer {
  const count = frame.readInt32BE(6);
  const entriesEnd = 10 + count * 6;
  for (let offset = 10; offset < entriesEnd; offset += 6) {
    if (frame.readInt16BE(offset) === CREATE_TOPICS) return frame;
  }
  const head = Buffer.from(frame.subarray(0, entriesEnd));
  head.writeInt32BE(count + 1, 6);
  const entry = Buffer.alloc(6);
  entry.writeInt16BE(CREATE_TOPICS, 0);
  entry.writeInt16BE(0, 2);
  entry.writeInt16BE(3, 4);
  return Buffer.concat([head, entry, version >= 1 ? frame.subarray(entriesEnd) : Buffer.alloc(0)]);
}
