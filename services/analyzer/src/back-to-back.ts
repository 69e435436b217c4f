/**
 * Work done in chunks while more is due: `step` runs, and while it says there is more (true) it
 * runs again on the next turn of the event loop, with the loop's other work in between. `start`
 * while a run is under way does nothing, so a timer may call it at any pace; after `stop` no step
 * runs. `step` receives whether it continues a run (`resume`) or starts one.
 */
export class BackToBack {
  readonly #step: (resume: boolean) => boolean;
  #running = false;
  #stopped = false;

  constructor(step: (resume: boolean) => boolean) {
    this.#step = step;
  }

  /** Whether a run is under way (a step is due on a later turn). */
  get running(): boolean {
    return this.#running;
  }

  start(): void {
    if (this.#running || this.#stopped) return;
    this.#run(false);
  }

  stop(): void {
    this.#stopped = true;
  }

  #run(resume: boolean): void {
    this.#running = false;
    if (this.#stopped) return;
    if (!this.#step(resume)) return;
    this.#running = true;
    setImmediate(() => this.#run(true));
  }
}
