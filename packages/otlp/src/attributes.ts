import type { Attributes } from './span.ts';

/**
 * The prototype of every attribute object the decoders create: empty, frozen, and itself without a
 * prototype, so no key a sender chooses (`__proto__`, `constructor`, `toString`) is inherited or
 * reaches a setter: each becomes an ordinary own property.
 *
 * Why not `Object.create(null)`: V8 keeps such objects in dictionary mode, and inserting into
 * them cost about a quarter of the whole protobuf decode. Objects made by a constructor stay in
 * fast mode, and spans from one instrumentation (same keys, same order) share their hidden class.
 */
const ATTRIBUTES_PROTOTYPE: object = Object.freeze(Object.create(null));

function AttributesConstructor(this: Attributes): void {}
AttributesConstructor.prototype = ATTRIBUTES_PROTOTYPE;

const NewAttributes = AttributesConstructor as unknown as new () => Attributes;

/** An empty attribute object as the decoders create them (see span.ts). */
export function createAttributes(): Attributes {
  return new NewAttributes();
}

/** Whether `attributes` has one of `keys`, with any value (see KeyedAttributeSelection). */
export function carriesKey(attributes: Attributes, keys: ReadonlySet<string>): boolean {
  for (const key of keys) if (key in attributes) return true;
  return false;
}
