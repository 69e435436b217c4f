import { defineError } from '@keyscope/errors';

/**
 * What makes `keyscope analyze` refuse an input file. Bad OTLP inside a readable file is the otlp
 * package's `KS_OTLP_*`; these cover the file around it. None reaches an HTTP sender: the status
 * only says "bad input" (400) to anything that maps codes generically, and every one is permanent
 * because reading the same file again fails the same way. analyze exits 1 on any of them (or
 * reports and skips them with --keep-going).
 */

export const ANALYZE_INPUT_UNREADABLE = defineError(
  'KS_ANALYZE_INPUT_UNREADABLE',
  400,
  false,
  'An input path does not exist, is not a regular file or folder, or cannot be read (permissions, I/O error).',
);

export const ANALYZE_RECORD_TOO_LARGE = defineError(
  'KS_ANALYZE_RECORD_TOO_LARGE',
  400,
  false,
  'A .pb or .json file, or one line of a JSON lines file, is larger after decompression than `--max-record-mib` (default 64 MiB).',
);

export const ANALYZE_BAD_COMPRESSION = defineError(
  'KS_ANALYZE_BAD_COMPRESSION',
  400,
  false,
  'A file named .gz does not start with the gzip magic bytes, or its gzip data is corrupt.',
);

export const ANALYZE_TRUNCATED = defineError(
  'KS_ANALYZE_TRUNCATED',
  400,
  false,
  'The input ends early: its gzip stream stops before its end marker, or the last line of a JSON lines file has no newline and is not a complete JSON record.',
);

export const ANALYZE_NO_INPUT = defineError(
  'KS_ANALYZE_NO_INPUT',
  400,
  false,
  'Nothing was analysed: every path was skipped (unknown extension, empty folder) or unreadable.',
);

/** Every code `keyscope analyze` declares, for the registry test and docs/errors.md. */
export const ANALYZE_ERRORS = [
  ANALYZE_INPUT_UNREADABLE,
  ANALYZE_RECORD_TOO_LARGE,
  ANALYZE_BAD_COMPRESSION,
  ANALYZE_TRUNCATED,
  ANALYZE_NO_INPUT,
] as const;
