import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { KeyscopeStore } from '../src/index.ts';

let dir: string;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'keyscope-checkpoints-'));
});

afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** Commits about `megabytes` MB of new pages, one transaction per ~256 KB. */
function write(store: KeyscopeStore, megabytes: number): void {
  const value = { padding: 'x'.repeat(64 * 1024) };
  for (let i = 0; i < megabytes * 4; i++) {
    store.transaction(() => {
      for (let j = 0; j < 4; j++) store.state.save(`filler-${i}-${j}`, value);
    });
  }
}

async function eventually(condition: () => boolean, timeoutMillis: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMillis;
  while (Date.now() < deadline) {
    if (condition()) return true;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return condition();
}

describe('background checkpoints', () => {
  it('copy committed pages from the WAL into the database file, with no commit checkpointing', async () => {
    const path = join(dir, 'keyscope.db');
    const store = new KeyscopeStore({ path, backgroundCheckpoints: true });
    try {
      const before = statSync(path).size;
      // 8 MB is far below the writer's own checkpoint bound (~256 MB): only the thread copies it.
      write(store, 8);
      expect(statSync(`${path}-wal`).size).toBeGreaterThan(8 * 1024 * 1024);
      expect(await eventually(() => statSync(path).size > before + 6 * 1024 * 1024, 10_000)).toBe(true);
      expect(store.state.load('filler-0-0')).toEqual({ padding: 'x'.repeat(64 * 1024) });
    } finally {
      store.close();
    }
  });

  it('are off unless asked for, and never for an in-memory database', async () => {
    const plain = new KeyscopeStore({ path: join(dir, 'plain.db') });
    const memory = new KeyscopeStore({ path: ':memory:', backgroundCheckpoints: true });
    expect([plain.checkpointsInBackground, memory.checkpointsInBackground]).toEqual([false, false]);
    expect([await plain.backgroundCheckpointsStarted, await memory.backgroundCheckpointsStarted]).toEqual([
      false,
      false,
    ]);
    plain.close();
    memory.close();
  });

  it('say when the thread is up and holds its connection, for each store it serves', async () => {
    const [a, b] = [join(dir, 'a.db'), join(dir, 'b.db')].map(
      (path) => new KeyscopeStore({ path, backgroundCheckpoints: true }),
    );
    try {
      expect(await Promise.all([a!.backgroundCheckpointsStarted, b!.backgroundCheckpointsStarted])).toEqual([
        true,
        true,
      ]);
    } finally {
      a!.close();
      b!.close();
    }
  });

  it('let go of the database before the store closes it, so that close removes the WAL', async () => {
    const path = join(dir, 'keyscope.db');
    const store = new KeyscopeStore({ path, backgroundCheckpoints: true });
    const before = statSync(path).size;
    write(store, 4);
    // The thread has its connection open once it has copied pages.
    expect(await eventually(() => statSync(path).size > before + 3 * 1024 * 1024, 10_000)).toBe(true);
    store.close();
    expect(existsSync(`${path}-wal`)).toBe(false);
    const reopened = new KeyscopeStore({ path, backgroundCheckpoints: true });
    try {
      expect(reopened.state.load('filler-3-3')).toEqual({ padding: 'x'.repeat(64 * 1024) });
    } finally {
      reopened.close();
    }
  });

  it('serve several stores from one thread, and keep serving after one of them closes', async () => {
    const paths = [join(dir, 'a.db'), join(dir, 'b.db')];
    const [a, b] = paths.map((path) => new KeyscopeStore({ path, backgroundCheckpoints: true }));
    a!.close();
    try {
      const before = statSync(paths[1]!).size;
      write(b!, 4);
      expect(await eventually(() => statSync(paths[1]!).size > before + 3 * 1024 * 1024, 10_000)).toBe(true);
    } finally {
      b!.close();
    }
  });
});
