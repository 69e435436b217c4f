import { closeSync, openSync, statSync, writeSync } from 'node:fs';
import { KeyscopeStore } from '@keyscope/store';
import { server } from '@keyscope/testkit';

/** A database of a few thousand attempts, one page in its middle overwritten. */
export function damagedDatabase(path: string): void {
  const store = new KeyscopeStore({ path });
  for (let from = 0; from < 4_000; from += 500) {
    store.transaction(() => {
      for (let i = from; i < from + 500; i++)
        store.attemptLog.append(`key-${i}`, server({ key: `key-${i}` }));
    });
  }
  store.close();
  const pages = statSync(path).size / 4096;
  const fd = openSync(path, 'r+');
  writeSync(fd, Buffer.alloc(4096, 0xa5), 0, 4096, Math.floor(pages / 2) * 4096);
  closeSync(fd);
}
