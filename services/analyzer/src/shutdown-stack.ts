/**
 * What a service or role started, stopped in the reverse order of starting, and only once however
 * often `stop` is called. Startup pushes each resource's stop as soon as it holds the resource, so
 * a startup that fails half way and a later shutdown release exactly what was started.
 */
export class ShutdownStack {
  readonly #steps: (() => Promise<void> | void)[] = [];
  #stopping: Promise<void> | undefined;

  push(step: () => Promise<void> | void): void {
    this.#steps.push(step);
  }

  stop(): Promise<void> {
    this.#stopping ??= this.#run();
    return this.#stopping;
  }

  async #run(): Promise<void> {
    for (let i = this.#steps.length - 1; i >= 0; i--) await this.#steps[i]!();
  }
}
