import type { Dirent, Stats } from 'node:fs';
import { readdir, realpath, stat } from 'node:fs/promises';
import { basename, join } from 'node:path';

/**
 * Which files `keyscope analyze` reads, in which order, and as what. The format comes from the
 * name (a `.gz` suffix aside); whether the bytes are gzip is decided later from the magic bytes,
 * so a `.jsonl` that was gzipped in place still reads.
 */

/** `protobuf`: one ExportTraceServiceRequest; `json`: one OTLP/JSON request (or JSON lines, see record-reader.ts); `jsonl`: one request per line. */
export type InputFormat = 'protobuf' | 'json' | 'jsonl';

export interface InputFile {
  /** As the user would recognise it: the argument, or the folder argument joined with the relative path. */
  readonly path: string;
  readonly format: InputFormat;
  /** The name ends in `.gz`: the content must be gzip. */
  readonly gzipSuffix: boolean;
  /** On disk (compressed, if it is); null for stdin. */
  readonly sizeBytes: number | null;
  readonly stdin: boolean;
}

export interface SkippedPath {
  readonly path: string;
  readonly reason: 'unknown_extension' | 'not_a_file';
}

export interface UnreadablePath {
  readonly path: string;
  readonly message: string;
}

export interface InputListing {
  readonly inputs: InputFile[];
  readonly skipped: SkippedPath[];
  readonly unreadable: UnreadablePath[];
}

export const STDIN_PATH = '-';

const FORMATS: Readonly<Record<string, InputFormat>> = { pb: 'protobuf', json: 'json', jsonl: 'jsonl' };

/** The format a file name declares, or undefined for names analyze does not read. */
export function formatOfName(name: string): { format: InputFormat; gzipSuffix: boolean } | undefined {
  let lower = basename(name).toLowerCase();
  const gzipSuffix = lower.endsWith('.gz');
  if (gzipSuffix) lower = lower.slice(0, -3);
  const dot = lower.lastIndexOf('.');
  if (dot < 0) return undefined;
  const format = FORMATS[lower.slice(dot + 1)];
  return format === undefined ? undefined : { format, gzipSuffix };
}

/**
 * Expands the command line's paths: files as given, folders recursively with each folder's entries
 * in code-point order (so two runs over one archive read it identically), `-` as JSON lines on
 * stdin. A file reached twice (named twice, or through a symlink) is read once.
 */
export async function listInputs(paths: readonly string[]): Promise<InputListing> {
  const listing: InputListing = { inputs: [], skipped: [], unreadable: [] };
  const seenFiles = new Set<string>();
  const seenFolders = new Set<string>();
  let stdinListed = false;

  const addFile = async (path: string, sizeBytes: number) => {
    const format = formatOfName(path);
    if (format === undefined) {
      listing.skipped.push({ path, reason: 'unknown_extension' });
      return;
    }
    const real = await realpath(path).catch(() => path);
    if (seenFiles.has(real)) return;
    seenFiles.add(real);
    listing.inputs.push({ path, ...format, sizeBytes, stdin: false });
  };

  const visit = async (path: string, stats: Stats, explicit: boolean): Promise<void> => {
    if (stats.isFile()) return addFile(path, stats.size);
    if (!stats.isDirectory()) {
      // A FIFO or device inside a folder is nothing to analyse; named explicitly, it is a mistake.
      if (explicit) listing.unreadable.push({ path, message: 'is not a regular file or folder' });
      else listing.skipped.push({ path, reason: 'not_a_file' });
      return;
    }
    const real = await realpath(path).catch(() => path);
    if (seenFolders.has(real)) return;
    seenFolders.add(real);
    let entries: Dirent[];
    try {
      entries = await readdir(path, { withFileTypes: true });
    } catch (error) {
      listing.unreadable.push({ path, message: systemMessage(error) });
      return;
    }
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const entry of entries) {
      const child = join(path, entry.name);
      if (entry.isFile()) {
        // Skipped by name first: a folder of mixed logs need not be stat'ed file by file.
        if (formatOfName(entry.name) === undefined)
          listing.skipped.push({ path: child, reason: 'unknown_extension' });
        else await visitPath(child, false);
      } else await visitPath(child, false);
    }
  };

  const visitPath = async (path: string, explicit: boolean): Promise<void> => {
    let stats: Stats;
    try {
      stats = await stat(path);
    } catch (error) {
      listing.unreadable.push({ path, message: systemMessage(error) });
      return;
    }
    await visit(path, stats, explicit);
  };

  for (const path of paths) {
    if (path === STDIN_PATH) {
      if (stdinListed) continue;
      stdinListed = true;
      listing.inputs.push({
        path: 'stdin',
        format: 'jsonl',
        gzipSuffix: false,
        sizeBytes: null,
        stdin: true,
      });
      continue;
    }
    await visitPath(path, true);
  }
  return listing;
}

/** "no such file or directory" rather than "ENOENT: no such file or directory, stat 'x'". */
export function systemMessage(error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code;
  const messages: Record<string, string> = {
    ENOENT: 'no such file or directory',
    EACCES: 'permission denied',
    EISDIR: 'is a folder',
    ENOTDIR: 'a path component is not a folder',
    ELOOP: 'too many levels of symbolic links',
  };
  return (code !== undefined ? messages[code] : undefined) ?? (error as Error).message ?? String(error);
}
