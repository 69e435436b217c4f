import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/**
 * Starts a TypeScript module of bench/ in a child Node process with an IPC channel, the way
 * `pnpm bench` itself runs (tsx as an import hook). tsx is located from here, so the child does
 * not depend on the working directory it was started from.
 */
export function forkTypeScript(
  moduleUrl: URL,
  options: { exposeGc?: boolean; nodeFlags?: readonly string[] } = {},
): ChildProcess {
  const execArgv = [...(options.nodeFlags ?? []), '--import', import.meta.resolve('tsx')];
  if (options.exposeGc) execArgv.unshift('--expose-gc');
  return fork(fileURLToPath(moduleUrl), [], { execArgv, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
}

/** The next message from `child`, or the reason it will never come. */
export function nextMessage<T>(child: ChildProcess): Promise<T> {
  return new Promise((resolve, reject) => {
    const onMessage = (message: T) => {
      cleanup();
      resolve(message);
    };
    const onExit = (code: number | null, signal: string | null) => {
      cleanup();
      reject(new Error(`child process exited (code ${code}, signal ${signal}) before answering`));
    };
    const onError = (error: Error) => {
      cleanup();
      reject(error);
    };
    const cleanup = () => {
      child.off('message', onMessage);
      child.off('exit', onExit);
      child.off('error', onError);
    };
    child.on('message', onMessage);
    child.on('exit', onExit);
    child.on('error', onError);
  });
}
