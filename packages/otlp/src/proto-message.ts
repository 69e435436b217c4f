/** Protobuf wire types. 3 and 4 (groups) are deprecated and 6, 7 are undefined: all are refused. */
export const WireType = { VARINT: 0, I64: 1, LEN: 2, I32: 5 } as const;
export type WireTypeValue = (typeof WireType)[keyof typeof WireType];

/** The key protobuf writes before a field: its number and wire type in one varint. */
export function tag(field: number, wireType: WireTypeValue): number {
  return (field << 3) | wireType;
}

/**
 * The fields of one protobuf message that keyscope reads or writes. `tag` holds each field's
 * whole tag, the value the decoders switch on and the writer writes: a known field that arrives
 * with another wire type has another tag, so it falls through to `WireReader.skip`, which refuses
 * it by `fields`.
 */
export interface ProtoMessage<Field extends string = string> {
  /** The message's proto name, for error messages. */
  readonly name: string;
  readonly tag: { readonly [F in Field]: number };
  /** By field number: the field's proto name and declared wire type. */
  readonly fields: readonly (readonly [name: string, wireType: number] | undefined)[];
}

/**
 * A message from its fields' tags (`tag(number, wireType)` each), keyed by the fields' JSON names
 * (lowerCamelCase, as OTLP/JSON writes them); error messages use the proto names (snake_case).
 * `tags` is kept as given, frozen: pass an object literal of plain numbers.
 */
export function protoMessage<const Tags extends Record<string, number>>(
  name: string,
  tags: Tags,
): ProtoMessage<keyof Tags & string> {
  const fields: ([string, number] | undefined)[] = [];
  for (const [jsonName, fieldTag] of Object.entries(tags)) {
    const field = fieldTag >>> 3;
    if (fields[field] !== undefined) throw new RangeError(`${name} declares field ${field} twice`);
    fields[field] = [protoNameOf(jsonName), fieldTag & 7];
  }
  return Object.freeze({ name, tag: Object.freeze(tags), fields: Object.freeze(fields) });
}

function protoNameOf(jsonName: string): string {
  return jsonName.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`);
}
