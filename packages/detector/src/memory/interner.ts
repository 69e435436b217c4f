/**
 * Strings ↔ small integers, so per-key state holds numbers instead of repeated strings. Names are
 * never forgotten one by one: KeyMemory replaces the whole interner with one holding only the
 * names its keys still use (`compactInterner` in key-memory.ts) when it has grown enough.
 */
export class Interner {
  private readonly ids = new Map<string, number>();
  private readonly names: string[] = [];

  id(name: string): number {
    let id = this.ids.get(name);
    if (id === undefined) {
      id = this.names.length;
      this.names.push(name);
      this.ids.set(name, id);
    }
    return id;
  }

  name(id: number): string {
    return id < 0 ? '' : this.names[id]!;
  }

  /** Names interned. */
  get size(): number {
    return this.names.length;
  }
}
