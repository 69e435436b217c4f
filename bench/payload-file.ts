import { closeSync, fsyncSync, openSync, readFileSync, writeSync } from 'node:fs';

/**
 * Pre-encoded payloads handed to the load generator's process through a file: each body as a
 * 4-byte little-endian length followed by its bytes.
 *
 * The file is synced before it is handed over. Left to the kernel's writeback, its tens of MB go
 * to disk during the next timed pass, and every `fsync` of the service on the same filesystem
 * waits for them: the WAL header sync that starts the WAL over took 50–71 ms on the main thread in
 * a pass after an unsynced file, and at most 6 ms after a synced one (`strace`, half load).
 */
export function writePayloadFile(path: string, bodies: readonly Uint8Array[]): void {
  const total = bodies.reduce((sum, body) => sum + 4 + body.byteLength, 0);
  const file = Buffer.allocUnsafe(total);
  let at = 0;
  for (const body of bodies) {
    file.writeUInt32LE(body.byteLength, at);
    file.set(body, at + 4);
    at += 4 + body.byteLength;
  }
  const fd = openSync(path, 'w');
  try {
    for (let written = 0; written < total; ) written += writeSync(fd, file, written);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** The bodies of a payload file, as views into one buffer. */
export function readPayloadFile(path: string): Buffer[] {
  const file = readFileSync(path);
  const bodies: Buffer[] = [];
  let at = 0;
  while (at < file.byteLength) {
    const length = file.readUInt32LE(at);
    if (at + 4 + length > file.byteLength) {
      throw new RangeError(`payload file ${path} is truncated: a body of ${length} bytes at offset ${at}`);
    }
    bodies.push(file.subarray(at + 4, at + 4 + length));
    at += 4 + length;
  }
  return bodies;
}
