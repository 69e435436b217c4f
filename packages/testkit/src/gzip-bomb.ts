import { gzipSync } from 'node:zlib';

/**
 * A small gzip body that inflates to `inflatedMebibytes` MiB of zeros: one member of 1 MiB of zeros
 * (about 1 KiB compressed) repeated, since gzip readers concatenate members.
 */
export function gzipBomb(inflatedMebibytes: number): Buffer {
  const member = gzipSync(Buffer.alloc(1024 * 1024));
  return Buffer.concat(Array.from({ length: inflatedMebibytes }, () => member));
}
