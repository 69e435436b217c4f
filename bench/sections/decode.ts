import type { ChildProcess } from 'node:child_process';
import { forkTypeScript, nextMessage } from '../fork-typescript.ts';
import { median, pairedRatio, secondsOf } from '../measure.ts';
import { decodeWithProtobufjs } from '../protobufjs-decoder.ts';
import type { Section } from '../section.ts';
import type { Row } from '../table.ts';
import type { DecodeProcessReply, DecodeProcessRequest } from './decode-process.ts';

const DECODE_TARGET_RATIO = 5;

/**
 * Decoding OTLP protobuf on one thread: keyscope's decoder, in full and with the attribute filter
 * the service's pipeline asks for, against protobufjs's full decode of the same bytes. The three
 * take turns within each repetition, so that each ratio compares runs made under the same load.
 */
export const decodeSection: Section = {
  name: 'decode',
  async run(context) {
    const { repetitions, decode } = context.sizes;
    const workload = context.sdkExportPayloads();
    // Node Buffers, as the receivers hand bodies over: protobufjs reads a Buffer with Node's native
    // UTF-8 decoding, but a plain Uint8Array with its slower JavaScript fallback.
    const bodies = workload.bodies.map((body) => Buffer.from(body.buffer, body.byteOffset, body.byteLength));
    const payloadFile = context.payloadFile(workload);
    const full = await DecodeProcess.start(payloadFile, 'all', decode.warmupPasses);
    const filtered = await DecodeProcess.start(payloadFile, 'service', decode.warmupPasses);
    try {
      const pass = () => {
        let spans = 0;
        for (const body of bodies) spans += decodeWithProtobufjs(body);
        return spans;
      };
      let protobufjsSpans = 0;
      for (let i = 0; i < decode.warmupPasses; i++) protobufjsSpans = pass();
      const rates = { protobufjs: [] as number[], full: [] as number[], filtered: [] as number[] };
      const counted = { protobufjs: protobufjsSpans, full: full.spans, filtered: filtered.spans };
      for (let i = 0; i < repetitions; i++) {
        rates.protobufjs.push(workload.spans / secondsOf(pass));
        for (const [name, process] of [
          ['full', full],
          ['filtered', filtered],
        ] as const) {
          const { seconds, spans } = await process.pass();
          rates[name].push(workload.spans / seconds);
          counted[name] = spans;
        }
      }

      const sameCount = Object.values(counted).every((spans) => spans === workload.spans);
      const shape =
        `${workload.bodies.length} payloads of 512 spans (${Math.round(workload.bytes / workload.spans)} bytes/span: ` +
        '12 resource attributes, ~10 span attributes, 1–2 events), as Node Buffers, decoded once per repetition; median of ' +
        `${repetitions} repetitions, ratios are medians of per-repetition ratios. Each keyscope configuration ` +
        'runs in a process of its own, as the service runs one (JIT code shared by two configurations is ' +
        'specialised for neither); the three take turns';
      const rows: Row[] = [
        {
          section: 'decode',
          measurement: 'protobufjs decode, official protos',
          value: median(rates.protobufjs),
          unit: 'spans/s',
          check: { ok: sameCount, what: `all three decoders counted ${workload.spans} spans` },
          samples: rates.protobufjs,
          note: `${shape}. protobufjs: ExportTraceServiceRequest.decode into message objects (ids as bytes, times as Long)`,
        },
        keyscopeRow('keyscope decodeTraces, all attributes', rates.full, rates.protobufjs),
        {
          ...keyscopeRow('keyscope decodeTraces, service attribute filter', rates.filtered, rates.protobufjs),
          note: `the embedded service's decodeOptions (its pipeline's): ${filtered.filter}`,
        },
      ];
      return rows;
    } finally {
      full.stop();
      filtered.stop();
    }
  },
};

/** A keyscope decoder's row: its rate, and its ratio to protobufjs against the target. */
function keyscopeRow(measurement: string, rates: number[], protobufjs: number[]): Row {
  return {
    section: 'decode',
    measurement,
    value: median(rates),
    unit: 'spans/s',
    target: { comparison: '>=', bound: DECODE_TARGET_RATIO, on: 'ratio' },
    ratio: { value: pairedRatio(rates, protobufjs), against: 'protobufjs' },
    samples: rates,
  };
}

/** A child process running one decode configuration over the workload's payload file. */
class DecodeProcess {
  readonly #child: ChildProcess;
  readonly spans: number;
  readonly filter: string;

  private constructor(child: ChildProcess, spans: number, filter: string) {
    this.#child = child;
    this.spans = spans;
    this.filter = filter;
  }

  static async start(
    payloadFile: string,
    filter: 'all' | 'service',
    warmupPasses: number,
  ): Promise<DecodeProcess> {
    const child = forkTypeScript(new URL('./decode-process.ts', import.meta.url));
    try {
      const reply = await ask(child, { type: 'load', payloadFile, filter, warmupPasses });
      if (reply.type !== 'loaded') throw new Error(`decode process: unexpected ${reply.type}`);
      return new DecodeProcess(child, reply.spans, reply.filter);
    } catch (error) {
      child.kill();
      throw error;
    }
  }

  async pass(): Promise<{ seconds: number; spans: number }> {
    const reply = await ask(this.#child, { type: 'pass' });
    if (reply.type !== 'passed') throw new Error(`decode process: unexpected ${reply.type}`);
    return reply;
  }

  stop(): void {
    this.#child.disconnect();
  }
}

async function ask(child: ChildProcess, request: DecodeProcessRequest): Promise<DecodeProcessReply> {
  const replied = nextMessage<DecodeProcessReply>(child);
  child.send(request);
  const reply = await replied;
  if (reply.type === 'failed') throw new Error(`decode process: ${reply.message}`);
  return reply;
}
