import { type DecodeOptions, decodeTraces } from '@keyscope/otlp';
import { median, pairedRatio, secondsOf } from '../measure.ts';
import { decodeWithProtobufjs } from '../protobufjs-decoder.ts';
import type { Section } from '../section.ts';
import type { Row } from '../table.ts';

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
    const filter = await context.serviceDecodeOptions();
    // Node Buffers, as the receivers hand bodies over: protobufjs reads a Buffer with Node's native
    // UTF-8 decoding, but a plain Uint8Array with its slower JavaScript fallback.
    const bodies = workload.bodies.map((body) => Buffer.from(body.buffer, body.byteOffset, body.byteLength));
    const contenders = {
      protobufjs: (body: Uint8Array) => decodeWithProtobufjs(body),
      full: (body: Uint8Array) => decodeTraces(body).length,
      filtered: (body: Uint8Array) => decodeTraces(body, filter).length,
    };
    type Contender = keyof typeof contenders;
    const names = Object.keys(contenders) as Contender[];
    const counted = {} as Record<Contender, number>;
    const pass = (name: Contender) => {
      const decode = contenders[name];
      let spans = 0;
      for (const body of bodies) spans += decode(body);
      counted[name] = spans;
    };

    for (let i = 0; i < decode.warmupPasses; i++) for (const name of names) pass(name);
    const rates = Object.fromEntries(names.map((name) => [name, [] as number[]])) as Record<
      Contender,
      number[]
    >;
    for (let i = 0; i < repetitions; i++) {
      for (const name of names) rates[name].push(workload.spans / secondsOf(() => pass(name)));
    }

    const sameCount = names.every((name) => counted[name] === workload.spans);
    const shape =
      `${workload.bodies.length} payloads of 512 spans (${Math.round(workload.bytes / workload.spans)} bytes/span: ` +
      '12 resource attributes, ~10 span attributes, 1–2 events), as Node Buffers, decoded once per repetition; median of ' +
      `${repetitions} repetitions, ratios are medians of per-repetition ratios`;
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
      {
        section: 'decode',
        measurement: 'keyscope decodeTraces, all attributes',
        value: median(rates.full),
        unit: 'spans/s',
        target: { comparison: '>=', bound: DECODE_TARGET_RATIO, on: 'ratio' },
        ratio: { value: pairedRatio(rates.full, rates.protobufjs), against: 'protobufjs' },
        samples: rates.full,
      },
      {
        section: 'decode',
        measurement: 'keyscope decodeTraces, service attribute filter',
        value: median(rates.filtered),
        unit: 'spans/s',
        target: { comparison: '>=', bound: DECODE_TARGET_RATIO, on: 'ratio' },
        ratio: { value: pairedRatio(rates.filtered, rates.protobufjs), against: 'protobufjs' },
        samples: rates.filtered,
        note: `the embedded service's decodeOptions (its pipeline's): ${describeFilter(filter)}`,
      },
    ];
    return rows;
  },
};

function describeFilter(options: DecodeOptions): string {
  const count = (keys: unknown) => (keys instanceof Set ? `${keys.size} keys` : 'all');
  const span = options.spanAttributes;
  const spanAttributes =
    typeof span === 'object' && 'whenKeyed' in span
      ? `${count(span.keys)} and ${count(span.always)} on every span, ${count(span.whenKeyed)} more on keyed spans`
      : count(span);
  return `span attributes ${spanAttributes}, resource attributes ${count(options.resourceAttributes)}, events ${options.events === false ? 'skipped' : 'kept'}`;
}
