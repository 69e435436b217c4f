import {
  closeSync,
  fdatasyncSync,
  ftruncateSync,
  mkdirSync,
  openSync,
  readdirSync,
  renameSync,
  statSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';

/**
 * The files of serve's payload archive in one folder: gzipped OTLP/JSON lines, one request a line,
 * which `keyscope analyze <folder>` reads as they are. A file is written under a name analyze does
 * not read (`….jsonl.gz.partial`) and renamed to its `.jsonl.gz` name once finished, so analyze
 * never reads a file still being written. Names sort in the order the files were started, which is
 * the order analyze reads a folder in.
 *
 * Each `append` adds one whole gzip member (a gzip file may hold several; analyze, gunzip and zcat
 * read them as one stream), so a finished file is valid gzip at every member's end. A write (or
 * sync) that fails is cut back to the end of the last member written.
 *
 * Each file is synced every `syncBytes` it grows, and before it is renamed: a power cut takes at
 * most the last few MiB written, and never leaves a finished name on data that is not on disk.
 * The syncs happen here, on the archive's own thread.
 *
 * Synchronous: it runs on the archive thread (archive-worker.ts), never on the event loop.
 */

export interface ArchiveFilesOptions {
  readonly dir: string;
  /** Finished files and the file being written, together; past it the oldest files are deleted. */
  readonly maxBytes: number;
  /** A file is finished before a member would take it past this size (a larger member gets a file of its own). */
  readonly fileBytes: number;
  /** …or once it has been open this long (`finishIfOlder`). */
  readonly fileMillis: number;
  readonly now?: () => number;
  /** Bytes written to a file between two syncs of it (default `SYNC_BYTES`). */
  readonly syncBytes?: number;
  /** Flushes a file's data to disk (default `fdatasync`): a seam for the tests that count syncs. */
  readonly sync?: (fd: number) => void;
}

export interface ArchiveFileCounts {
  /** Compressed bytes written, over all files. */
  writtenBytes: number;
  /** Files finished (renamed to their `.jsonl.gz` name). */
  finishedFiles: number;
  /** Oldest files deleted to stay within `maxBytes`, and their bytes. */
  deletedFiles: number;
  deletedBytes: number;
  /** The archive's files on disk now, the one being written included. */
  diskBytes: number;
}

const PREFIX = 'traces-';
const SUFFIX = '.jsonl.gz';
const PARTIAL = '.partial';
/** 4 MiB: about a third of a second of the archive at 300,000 spans/s (~16 MB of gzip a second). */
const SYNC_BYTES = 4 * 1024 * 1024;

interface OpenFile {
  readonly name: string;
  readonly fd: number;
  bytes: number;
  /** `bytes` at the last sync. */
  syncedBytes: number;
  readonly openedUnixMillis: number;
}

interface FinishedFile {
  readonly name: string;
  readonly bytes: number;
}

export class ArchiveFiles {
  readonly #options: ArchiveFilesOptions;
  readonly #now: () => number;
  readonly #syncBytes: number;
  readonly #sync: (fd: number) => void;
  /** Oldest first. */
  readonly #finished: FinishedFile[] = [];
  #finishedBytes = 0;
  #current: OpenFile | undefined;
  #sequence = 0;
  readonly #counts: ArchiveFileCounts = {
    writtenBytes: 0,
    finishedFiles: 0,
    deletedFiles: 0,
    deletedBytes: 0,
    diskBytes: 0,
  };

  /**
   * Creates the folder if missing and takes over the files already in it, which count towards
   * `maxBytes`. A `.partial` file left by a process that was killed holds whole members up to its
   * last write: it is finished under its `.jsonl.gz` name.
   */
  constructor(options: ArchiveFilesOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
    this.#syncBytes = options.syncBytes ?? SYNC_BYTES;
    this.#sync = options.sync ?? fdatasyncSync;
    mkdirSync(options.dir, { recursive: true });
    // Refused here rather than at the first payload: a folder that cannot be written stops startup.
    const probe = join(options.dir, '.keyscope-write-probe');
    closeSync(openSync(probe, 'w'));
    unlinkSync(probe);
    const names = readdirSync(options.dir)
      .filter((name) => name.startsWith(PREFIX) && (name.endsWith(SUFFIX) || name.endsWith(SUFFIX + PARTIAL)))
      .sort();
    for (let name of names) {
      if (name.endsWith(PARTIAL)) {
        const finished = name.slice(0, -PARTIAL.length);
        renameSync(join(options.dir, name), join(options.dir, finished));
        name = finished;
      }
      this.#addFinished({ name, bytes: statSync(join(options.dir, name)).size });
    }
    this.#bound(0);
  }

  counts(): ArchiveFileCounts {
    return { ...this.#counts, diskBytes: this.#finishedBytes + (this.#current?.bytes ?? 0) };
  }

  /**
   * Appends one gzip member. Throws the file system's error when it cannot be written (a full
   * disk, a folder removed); the file being written is then cut back to its last whole member and
   * finished, and the next append starts a new one.
   */
  append(member: Uint8Array): void {
    const current = this.#current;
    if (
      current !== undefined &&
      current.bytes > 0 &&
      current.bytes + member.byteLength > this.#options.fileBytes
    ) {
      this.finish();
    }
    const file = this.#current ?? this.#open();
    try {
      let at = 0;
      while (at < member.byteLength) at += writeSync(file.fd, member, at, member.byteLength - at);
      if (file.bytes + member.byteLength - file.syncedBytes >= this.#syncBytes) {
        this.#sync(file.fd);
        file.syncedBytes = file.bytes + member.byteLength;
      }
    } catch (error) {
      try {
        ftruncateSync(file.fd, file.bytes);
      } catch {
        // The file keeps a torn last member, which analyze names as truncated (`--keep-going` reads the rest).
      }
      try {
        this.finish();
      } catch {
        // The write's own error is the one to report.
      }
      throw error;
    }
    file.bytes += member.byteLength;
    this.#counts.writtenBytes += member.byteLength;
  }

  /** Finishes the file being written if it has been open for `fileMillis`. */
  finishIfOlder(): void {
    const current = this.#current;
    if (current !== undefined && this.#now() - current.openedUnixMillis >= this.#options.fileMillis) {
      this.finish();
    }
  }

  /**
   * Syncs and closes the file being written and renames it to its `.jsonl.gz` name (an empty one
   * is removed).
   */
  finish(): void {
    const current = this.#current;
    if (current === undefined) return;
    this.#current = undefined;
    const partial = join(this.#options.dir, current.name + PARTIAL);
    // Its data on disk before its finished name is. A sync that fails still finishes the file, so
    // that it counts towards maxBytes; the caller hears of the failure.
    let syncFailure: unknown;
    try {
      if (current.bytes > current.syncedBytes) this.#sync(current.fd);
    } catch (error) {
      syncFailure = error;
    }
    closeSync(current.fd);
    if (current.bytes === 0) {
      unlinkSync(partial);
    } else {
      renameSync(partial, join(this.#options.dir, current.name));
      this.#addFinished({ name: current.name, bytes: current.bytes });
      this.#counts.finishedFiles++;
    }
    if (syncFailure !== undefined) throw syncFailure;
  }

  #open(): OpenFile {
    // Room for the new file to grow to `fileBytes` before it is finished.
    this.#bound(this.#options.fileBytes);
    const openedUnixMillis = this.#now();
    const stamp = new Date(openedUnixMillis).toISOString().replace(/[:.]/g, '-');
    const name = `${PREFIX}${stamp}-${String(++this.#sequence).padStart(6, '0')}${SUFFIX}`;
    const fd = openSync(join(this.#options.dir, name + PARTIAL), 'wx');
    this.#current = { name, fd, bytes: 0, syncedBytes: 0, openedUnixMillis };
    return this.#current;
  }

  #addFinished(file: FinishedFile): void {
    this.#finished.push(file);
    this.#finishedBytes += file.bytes;
  }

  /** Deletes the oldest finished files until they and `reserveBytes` fit in `maxBytes`. */
  #bound(reserveBytes: number): void {
    while (this.#finished.length > 0 && this.#finishedBytes + reserveBytes > this.#options.maxBytes) {
      const oldest = this.#finished[0]!;
      try {
        unlinkSync(join(this.#options.dir, oldest.name));
      } catch (error) {
        // Removed by someone else: it no longer takes room.
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      }
      this.#finished.shift();
      this.#finishedBytes -= oldest.bytes;
      this.#counts.deletedFiles++;
      this.#counts.deletedBytes += oldest.bytes;
    }
  }
}
