/** Strings ↔ small integers, so per-key state holds numbers instead of repeated strings. */
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
}
