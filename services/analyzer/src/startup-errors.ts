import { statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { defaultMapping, loadMapping, type Mapping } from '@keyscope/attempts';
import { KeyscopeError } from '@keyscope/errors';
import { ANALYZER_DB_FOLDER_MISSING, ANALYZER_MAPPING_UNREADABLE, ANALYZER_PORT_IN_USE } from './errors.ts';
import { formatHostPort, type ListenAddress } from './listen-address.ts';

/**
 * What stops `keyscope serve` from starting, said so that one line names the thing (a path, a
 * port) and where it is set (flag, config field, environment variable), and what to do.
 */

export type ListenerName = 'api' | 'otlp-http' | 'otlp-grpc';

/** Where each listener's port is set. */
const PORT_SETTINGS: Readonly<Record<ListenerName, string>> = {
  api: '--api-port, api.port or KEYSCOPE_API_PORT',
  'otlp-http': '--otlp-http-port, otlp.http.port or KEYSCOPE_OTLP_HTTP_PORT',
  'otlp-grpc': '--otlp-grpc-port, otlp.grpc.port or KEYSCOPE_OTLP_GRPC_PORT',
};

/** The error a listener that could not bind throws: KS_ANALYZER_PORT_IN_USE when the port is taken. */
export function listenFailure(listener: ListenerName, address: ListenAddress, error: unknown): Error {
  const where = formatHostPort(address);
  if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') {
    return new KeyscopeError(
      ANALYZER_PORT_IN_USE,
      `${listener} cannot listen on ${where}: another process listens there; stop it, or set another port with ${PORT_SETTINGS[listener]} (0 picks a free one)`,
      { cause: error },
    );
  }
  return new Error(`${listener} cannot listen on ${where}: ${(error as Error).message}`, { cause: error });
}

/** Refuses a `db.path` whose folder does not exist, before anything opens (and so creates) a file. */
export function checkDatabaseFolder(path: string): void {
  if (path === ':memory:' || path === '') return;
  const folder = dirname(resolve(path));
  let isFolder = false;
  try {
    isFolder = statSync(folder).isDirectory();
  } catch {
    // Absent or unreachable: said below as absent, which is what there is to fix.
  }
  if (!isFolder) {
    throw new KeyscopeError(
      ANALYZER_DB_FOLDER_MISSING,
      `database ${path} cannot be created: folder ${folder} does not exist; create it (mkdir -p ${folder}) or set another path with --db, db.path or KEYSCOPE_DB_PATH`,
    );
  }
}

/**
 * The attribute mapping of `mapping.file`; the defaults for ''. A relative path resolves against
 * the working directory, as every path of the config does. Unreadable: KS_ANALYZER_MAPPING_UNREADABLE.
 */
export async function readMappingFile(file: string): Promise<Mapping> {
  if (file === '') return defaultMapping();
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    const absolute = resolve(file);
    const shown =
      absolute === file
        ? file
        : `${file} (${absolute}: relative paths resolve against the working directory)`;
    const reason =
      (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (error as Error).message;
    throw new KeyscopeError(
      ANALYZER_MAPPING_UNREADABLE,
      `mapping.file ${shown} cannot be read: ${reason}; fix mapping.file or KEYSCOPE_MAPPING_FILE, or set it to '' for the default mapping`,
      { cause: error },
    );
  }
  return loadMapping(text, file);
}

/** The startup line saying which mapping serve uses: `mapping: /etc/keyscope/mapping.yaml, 2 declared scopes`. */
export function describeMapping(file: string, mapping: Mapping): string {
  if (file === '') return 'mapping: the defaults (mapping.file is empty), no declared scopes';
  const scopes = mapping.scopes.length;
  return `mapping: ${resolve(file)}, ${scopes} declared scope${scopes === 1 ? '' : 's'}`;
}
