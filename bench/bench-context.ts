import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DecodeOptions } from '@keyscope/otlp';
import { writeArchive } from './archive-files.ts';
import type { BenchSizes } from './bench-sizes.ts';
import { serviceDecodeOptions } from './in-process-service.ts';
import { LoadGeneratorProcess } from './load-generator-process.ts';
import { writePayloadFile } from './payload-file.ts';
import type { EncodedPayloads } from './workloads/encoded-payloads.ts';
import { sdkExportPayloads } from './workloads/sdk-export-payloads.ts';
import { simulatedPayloads } from './workloads/simulated-payloads.ts';

/**
 * What sections share within one run: the sizes, workloads built once (before any timing), a
 * scratch directory, and the load generator's process. `close()` releases all of it.
 */
export class BenchContext {
  readonly sizes: BenchSizes;
  readonly scratchDir: string;
  #sdkExport: EncodedPayloads | undefined;
  #simulated: EncodedPayloads | undefined;
  #archive: EncodedPayloads | undefined;
  #archiveDir: string | undefined;
  #loadGenerator: LoadGeneratorProcess | undefined;
  #decodeOptions: Promise<DecodeOptions> | undefined;
  readonly #payloadFiles = new Map<EncodedPayloads, string>();

  /** `--detector-baseline`: another checkout whose detector the detector section runs beside this one's. */
  readonly detectorBaseline: string | undefined;

  constructor(sizes: BenchSizes, options: { detectorBaseline?: string } = {}) {
    this.sizes = sizes;
    this.detectorBaseline = options.detectorBaseline;
    this.scratchDir = mkdtempSync(join(tmpdir(), 'keyscope-bench-'));
  }

  /** The decode workload: per-instance SDK exports of 512 spans (sdk-export-payloads.ts). */
  sdkExportPayloads(): EncodedPayloads {
    this.#sdkExport ??= sdkExportPayloads(this.sizes.decode.payloads, this.sizes.seed);
    return this.#sdkExport;
  }

  /** The detection workload: the simulator's benchmark scenario (simulated-payloads.ts). */
  simulatedPayloads(): EncodedPayloads {
    this.#simulated ??= simulatedPayloads(this.sizes.persistence.spans, this.sizes.seed);
    return this.#simulated;
  }

  /**
   * The archive workload: the same simulator scenario at `sizes.analyze.spans` (a million spans in
   * full mode), kept apart from the persisted-ingest one so that section stays as it was.
   */
  archivePayloads(): EncodedPayloads {
    this.#archive ??= simulatedPayloads(this.sizes.analyze.spans, this.sizes.seed);
    return this.#archive;
  }

  /** A folder holding the archive workload as `keyscope analyze` reads it, written once per run. */
  archiveDir(): string {
    this.#archiveDir ??= writeArchive(this.freshDir('archive'), this.archivePayloads());
    return this.#archiveDir;
  }

  /** The attribute filter the embedded service decodes with, read from a service started once. */
  serviceDecodeOptions(): Promise<DecodeOptions> {
    this.#decodeOptions ??= serviceDecodeOptions();
    return this.#decodeOptions;
  }

  /** A file holding `payloads` for the load generator, written once per workload. */
  payloadFile(payloads: EncodedPayloads): string {
    let path = this.#payloadFiles.get(payloads);
    if (path === undefined) {
      path = join(this.scratchDir, `payloads-${this.#payloadFiles.size}.bin`);
      writePayloadFile(path, payloads.bodies);
      this.#payloadFiles.set(payloads, path);
    }
    return path;
  }

  loadGenerator(): LoadGeneratorProcess {
    this.#loadGenerator ??= LoadGeneratorProcess.start();
    return this.#loadGenerator;
  }

  /** A fresh directory under the scratch directory. */
  freshDir(prefix: string): string {
    return mkdtempSync(join(this.scratchDir, `${prefix}-`));
  }

  close(): void {
    this.#loadGenerator?.stop();
    rmSync(this.scratchDir, { recursive: true, force: true });
  }
}
