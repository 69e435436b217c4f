import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createDetector, type Incident } from '@keyscope/detector';
import { server } from '@keyscope/testkit';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { KeyscopeStore } from '../src/index.ts';

let dir: string;
let path: string;
let store: KeyscopeStore;

/** The incident a detector reports for one key executed in two node stores, with `keys` keys. */
function incident(keys: number): Incident {
  const changes = createDetector().ingest({
    attempts: [
      server({ key: 'k1', node: 'a', store: 'A', at: 0 }),
      server({ key: 'k1', node: 'b', store: 'B', at: 2 }),
    ],
    activity: [],
    invalid: { outcome: 0, hit: 0, scope: 0 },
  });
  return { ...changes.incidents[0]!, keys };
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'keyscope-incident-parts-'));
  path = join(dir, 'keyscope.db');
  store = new KeyscopeStore({ path });
});

afterEach(() => {
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('the Kafka serve role’s incident parts', () => {
  it('keeps one part per partition in partition order, replaces a part, and forgets a retracted one', () => {
    const id = incident(1).id;
    store.transaction(() => {
      store.incidentParts.put(id, 3, incident(3));
      store.incidentParts.put(id, 1, incident(1));
    });
    expect(store.incidentParts.of(id).map((part) => part.keys)).toEqual([1, 3]);
    store.transaction(() => store.incidentParts.put(id, 1, incident(2)));
    expect(store.incidentParts.of(id).map((part) => part.keys)).toEqual([2, 3]);
    store.transaction(() => store.incidentParts.delete(id, 3));
    store.close();
    store = new KeyscopeStore({ path });
    expect(store.incidentParts.of(id)).toEqual([incident(2)]);
    store.transaction(() => store.incidentParts.delete(id, 1));
    expect(store.incidentParts.of(id)).toEqual([]);
  });
});
