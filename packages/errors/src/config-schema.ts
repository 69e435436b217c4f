import { type ErrorDefinition, KeyscopeError } from './keyscope-error.ts';

/**
 * One strict schema per configuration. A configuration is declared once, as an object of field
 * specs: each field's default (or that it is required, or optional), its check, and its doc
 * comment, written on the spec's property (the derived type keeps it). From that one declaration
 * come the type (`ConfigOf`), the frozen defaults and the validator, which refuses unknown keys and
 * names the field in every message, e.g. `otlp.http.port must be an integer from 0 to 65535,
 * received "x"`, with the error definition the consumer gives.
 *
 * Field checks are meant for configuration read once at startup: a decoder on a hot path keeps
 * its own loop (and may borrow `describeValue`).
 */

/** The codes a schema refuses with, by kind of problem. */
export interface ConfigErrors {
  /** A value of the wrong kind: text where a number belongs, a list where a mapping does. */
  readonly wrongType: ErrorDefinition;
  /** A value of the right kind that the field does not accept. */
  readonly invalidValue: ErrorDefinition;
  readonly unknownKey: ErrorDefinition;
  /** A required field left out; default `invalidValue` (a schema without required fields needs none). */
  readonly missing?: ErrorDefinition;
}

export interface ConfigRules {
  /** One definition for every refusal, or one per kind of problem. */
  readonly errors: ErrorDefinition | ConfigErrors;
  /**
   * What messages call a JSON object: `mapping` (YAML's word, the default) or `object` (for
   * options passed from code, and where "mapping" already names something else).
   */
  readonly objects?: 'mapping' | 'object';
  /** What messages call the whole value, where its path is empty; default `the configuration`. */
  readonly rootName?: string;
  /**
   * A section written with nothing under it (YAML `db:`, which reads as null) keeps its values
   * rather than being refused. Only sections: a null field is still refused.
   */
  readonly blankSectionsKeepValues?: boolean;
  /** Default: `'otlp.http' has an unknown key 'prot'; known keys: host, port, …`. */
  readonly unknownKeyMessage?: (parent: string, key: string, known: readonly string[]) => string;
}

interface Rules {
  readonly errors: Required<ConfigErrors>;
  readonly objects: 'mapping' | 'object';
  readonly rootName: string;
  readonly blankSectionsKeepValues: boolean;
  readonly unknownKeyMessage: (parent: string, key: string, known: readonly string[]) => string;
}

const resolved = new WeakMap<ConfigRules, Rules>();

function resolveRules(rules: ConfigRules): Rules {
  let known = resolved.get(rules);
  if (known === undefined) {
    known = resolveNewRules(rules);
    resolved.set(rules, known);
  }
  return known;
}

function unknownKeyMessage(parent: string, key: string, known: readonly string[]): string {
  return `'${parent || '(root)'}' has an unknown key '${key}'; known keys: ${known.join(', ')}`;
}

function resolveNewRules(rules: ConfigRules): Rules {
  const errors =
    'code' in rules.errors
      ? {
          wrongType: rules.errors,
          invalidValue: rules.errors,
          unknownKey: rules.errors,
          missing: rules.errors,
        }
      : { ...rules.errors, missing: rules.errors.missing ?? rules.errors.invalidValue };
  return Object.freeze({
    errors,
    objects: rules.objects ?? 'mapping',
    rootName: rules.rootName ?? 'the configuration',
    blankSectionsKeepValues: rules.blankSectionsKeepValues ?? false,
    unknownKeyMessage: rules.unknownKeyMessage ?? unknownKeyMessage,
  });
}

/**
 * A value as a message shows it after "received": text quoted, numbers and booleans as written,
 * containers by kind (their content may be long, or secret).
 */
export function describeValue(value: unknown, objects: 'mapping' | 'object' = 'mapping'): string {
  if (value === undefined) return 'nothing';
  if (typeof value === 'string') return JSON.stringify(value);
  if (Array.isArray(value)) return 'a list';
  if (value === null) return 'null';
  return typeof value === 'object' ? `a${objects === 'object' ? 'n' : ''} ${objects}` : String(value);
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Where `name` sits in a configuration refused by `rules`; `source` prefixes its messages. */
export function fieldPath(rules: ConfigRules, name = '', source = ''): FieldPath {
  return new FieldPath(resolveRules(rules), name, source);
}

/** Where a value sits in a configuration, and how to refuse it there. */
export class FieldPath {
  readonly #rules: Rules;
  readonly #source: string;
  /** Dotted, with list indexes (`alerts.sinks[1].url`); '' for the whole value. */
  readonly name: string;

  /** Use `fieldPath` or a schema's `at`. */
  constructor(rules: Rules, name: string, source: string) {
    this.#rules = rules;
    this.name = name;
    this.#source = source;
  }

  child(key: string): FieldPath {
    return new FieldPath(this.#rules, this.name === '' ? key : `${this.name}.${key}`, this.#source);
  }

  item(index: number): FieldPath {
    return new FieldPath(this.#rules, `${this.name}[${index}]`, this.#source);
  }

  get blankSectionsKeepValues(): boolean {
    return this.#rules.blankSectionsKeepValues;
  }

  /** `a mapping` or `an object`, as this configuration's messages say it. */
  get objectNoun(): string {
    return this.#rules.objects === 'object' ? 'an object' : 'a mapping';
  }

  describe(value: unknown): string {
    return describeValue(value, this.#rules.objects);
  }

  /**
   * For a value of the wrong kind: `<path> must be <expected>, received <value>`; `received`
   * replaces the value where it must not be shown.
   */
  wrongType(expected: string, value: unknown, received = this.describe(value)): KeyscopeError {
    return this.refuse(this.#rules.errors.wrongType, this.#mustBe(expected, received));
  }

  /** For a value of the right kind that the field does not accept; same wording as `wrongType`. */
  invalid(expected: string, value: unknown, received = this.describe(value)): KeyscopeError {
    return this.refuse(this.#rules.errors.invalidValue, this.#mustBe(expected, received));
  }

  /** `<path> is required`, followed by `detail` (e.g. `: one of a, b`). */
  missing(detail = ''): KeyscopeError {
    return this.refuse(this.#rules.errors.missing, `${this.#label()} is required${detail}`);
  }

  unknownKey(key: string, known: readonly string[]): KeyscopeError {
    return this.refuse(this.#rules.errors.unknownKey, this.#rules.unknownKeyMessage(this.name, key, known));
  }

  /** Any other refusal; the message is complete (name the path in it), the source is prefixed. */
  refuse(definition: ErrorDefinition, message: string, cause?: unknown): KeyscopeError {
    const text = this.#source === '' ? message : `${this.#source}: ${message}`;
    return new KeyscopeError(definition, text, cause === undefined ? undefined : { cause });
  }

  /** `value` as a mapping whose keys are all in `known`. */
  object(value: unknown, known: readonly string[], expected = this.objectNoun): Record<string, unknown> {
    if (!isPlainObject(value)) throw this.wrongType(expected, value);
    for (const key of Object.keys(value)) if (!known.includes(key)) throw this.unknownKey(key, known);
    return value;
  }

  #label(): string {
    return this.name === '' ? this.#rules.rootName : this.name;
  }

  #mustBe(expected: string, received: string): string {
    return `${this.#label()} must be ${expected}, received ${received}`;
  }
}

/** Which kind of value a field holds; `text` fields keep their text when read from the environment. */
export type FieldKind = 'integer' | 'text' | 'boolean' | 'choice' | 'list' | 'object' | 'custom';

/** An absent field takes its default, is refused (`required`) or stays absent (`optional`). */
export type Presence = 'default' | 'required' | 'optional';

export interface FieldSpec<T, P extends Presence = Presence> {
  readonly kind: FieldKind;
  readonly presence: P;
  /** What an absent field takes; undefined unless `presence` is `default`. */
  readonly default: T | undefined;
  /** The checked value; `base` is what the field holds before `value` is laid over it. */
  check(value: unknown, at: FieldPath, base: T | undefined): T;
}

export type PresenceOptions<T> =
  | { readonly default: T }
  | { readonly required: true }
  | { readonly optional: true };

type PresenceOf<O> = O extends { readonly required: true }
  ? 'required'
  : O extends { readonly optional: true }
    ? 'optional'
    : 'default';

export type Fields = { readonly [key: string]: FieldSpec<unknown> };

type ValueOf<S> = S extends { check(...args: never[]): infer T } ? T : never;

/** The configuration type a schema's fields describe: readonly, optional fields marked `?`. */
export type ConfigOf<F extends Fields> = Simplify<
  {
    readonly [K in keyof F as F[K] extends { readonly presence: 'optional' } ? never : K]: ValueOf<F[K]>;
  } & {
    readonly [K in keyof F as F[K] extends { readonly presence: 'optional' } ? K : never]?: ValueOf<F[K]>;
  }
>;

type Simplify<T> = { [K in keyof T]: T[K] } & {};

type ObjectPresence<F extends Fields, O> = O extends { readonly optional: true }
  ? 'optional'
  : { [K in keyof F]: F[K]['presence'] }[keyof F] extends infer P
    ? 'required' extends P
      ? 'required'
      : 'default'
    : never;

function spec<T, P extends Presence>(
  kind: FieldKind,
  options: PresenceOptions<T>,
  check: (value: unknown, at: FieldPath, base: T | undefined) => T,
): FieldSpec<T, P> {
  const presence = ('required' in options ? 'required' : 'optional' in options ? 'optional' : 'default') as P;
  return Object.freeze({
    kind,
    presence,
    default: 'default' in options ? options.default : undefined,
    check,
  });
}

export interface IntegerOptions {
  /** Default 1. */
  readonly min?: number;
  /** Default `Number.MAX_SAFE_INTEGER`. */
  readonly max?: number;
}

/** A safe integer within [min, max]; a positive one unless bounded otherwise. */
export function integer<const O extends PresenceOptions<number> & IntegerOptions>(
  options: O,
): FieldSpec<number, PresenceOf<O>> {
  const min = options.min ?? 1;
  const max = options.max ?? Number.MAX_SAFE_INTEGER;
  const expected =
    min === 1 && max === Number.MAX_SAFE_INTEGER ? 'a positive integer' : `an integer from ${min} to ${max}`;
  return spec('integer', options, (value, at) => {
    if (typeof value !== 'number') throw at.wrongType(expected, value);
    if (!Number.isSafeInteger(value) || value < min || value > max) throw at.invalid(expected, value);
    return value;
  });
}

export interface TextOptions {
  /** Refuses '' and white space only. */
  readonly nonEmpty?: boolean;
  readonly accepts?: RegExp | ((text: string) => boolean);
  /** What messages say is expected; default `a string` or `a non-empty string`. */
  readonly expected?: string;
  /** A credential: messages give its length, never its text. */
  readonly secret?: boolean;
}

export function text<const O extends PresenceOptions<string> & TextOptions>(
  options: O,
): FieldSpec<string, PresenceOf<O>> {
  const expected = options.expected ?? (options.nonEmpty ? 'a non-empty string' : 'a string');
  const accepts = options.accepts;
  const test = typeof accepts === 'function' ? accepts : (text: string) => accepts?.test(text) ?? true;
  const received = (value: unknown, at: FieldPath): string => {
    if (!options.secret || (typeof value === 'object' && value !== null)) return at.describe(value);
    return typeof value === 'string' ? `${value.length} characters` : `a ${typeof value}`;
  };
  return spec('text', options, (value, at) => {
    if (typeof value !== 'string') throw at.wrongType(expected, value, received(value, at));
    if ((options.nonEmpty && value.trim() === '') || !test(value)) {
      throw at.invalid(expected, value, received(value, at));
    }
    return value;
  });
}

export function boolean<const O extends PresenceOptions<boolean>>(
  options: O,
): FieldSpec<boolean, PresenceOf<O>> {
  return spec('boolean', options, (value, at) => {
    if (typeof value !== 'boolean') throw at.wrongType('true or false', value);
    return value;
  });
}

/** One of `values`. */
export function oneOf<const V extends string, const O extends PresenceOptions<NoInfer<V>>>(
  values: readonly V[],
  options: O,
): FieldSpec<V, PresenceOf<O>> {
  const expected = `one of ${values.join(', ')}`;
  return spec('choice', options, (value, at) => {
    if (typeof value !== 'string') throw at.wrongType(expected, value);
    if (!(values as readonly string[]).includes(value)) throw at.invalid(expected, value);
    return value as V;
  });
}

/** A list whose every entry `item` checks; a given list replaces the default whole. */
export function list<T, const O extends PresenceOptions<readonly NoInfer<T>[]>>(
  item: FieldSpec<T>,
  options: O & { readonly expected?: string },
): FieldSpec<readonly T[], PresenceOf<O>> {
  const expected = options.expected ?? 'a list';
  return spec('list', options, (value, at) => {
    if (!Array.isArray(value)) throw at.wrongType(expected, value);
    return value.map((entry, index) => item.check(entry, at.item(index), undefined));
  });
}

/** A check the kinds above do not express; it throws with `at` (`at.invalid(…)`, `at.refuse(…)`). */
export function custom<T, const O extends PresenceOptions<NoInfer<T>>>(
  check: (value: unknown, at: FieldPath) => T,
  options: O,
): FieldSpec<T, PresenceOf<O>> {
  return spec('custom', options, (value, at) => check(value, at));
}

export interface ObjectSpec<F extends Fields, P extends Presence = Presence>
  extends FieldSpec<ConfigOf<F>, P> {
  readonly kind: 'object';
  readonly fields: F;
}

export interface ObjectOptions {
  /** The whole object may be left out (and then stays absent). */
  readonly optional?: true;
  /** What messages say is expected; default `a mapping` (or `an object`). */
  readonly expected?: string;
}

/**
 * A nested section: any subset of its keys, each laid over what the section holds (its default,
 * or the base given to `parse`); unknown keys are refused. It has a default when none of its
 * fields is required.
 */
export function object<const F extends Fields, const O extends ObjectOptions = ObjectOptions>(
  fields: F,
  options?: O,
): ObjectSpec<F, ObjectPresence<F, O>> {
  const keys = Object.keys(fields);
  const required = keys.some((key) => fields[key]!.presence === 'required');
  const presence = options?.optional ? 'optional' : required ? 'required' : 'default';
  const check = (value: unknown, at: FieldPath, base: ConfigOf<F> | undefined): ConfigOf<F> => {
    if (value === null && at.blankSectionsKeepValues && base !== undefined) return base;
    const given = at.object(value, keys, options?.expected);
    const holds = (base ?? {}) as Record<string, unknown>;
    const result: Record<string, unknown> = {};
    for (const key of keys) {
      const field = fields[key]!;
      const before = base === undefined ? field.default : holds[key];
      const entry = given[key];
      if (entry !== undefined) result[key] = field.check(entry, at.child(key), before);
      else if (before !== undefined) result[key] = before;
      else if (field.presence === 'required') throw at.child(key).missing();
    }
    return result as ConfigOf<F>;
  };
  const defaults =
    presence === 'default'
      ? deepFreeze(
          Object.fromEntries(
            keys
              .filter((key) => fields[key]!.default !== undefined)
              .map((key) => [key, fields[key]!.default]),
          ) as ConfigOf<F>,
        )
      : undefined;
  return Object.freeze({
    kind: 'object' as const,
    presence: presence as ObjectPresence<F, O>,
    default: defaults,
    fields,
    check,
  });
}

export interface ParseOptions<T> {
  /** Where the value sits, for messages: `alerts` names `alerts.sinks[0].url`. Default ''. */
  readonly path?: string;
  /** Prefixed to every message as `<source>: `, e.g. the file the value was read from. */
  readonly source?: string;
  /** What the value is laid over; default the defaults. */
  readonly base?: T;
}

export interface ConfigSchema<F extends Fields> {
  readonly fields: F;
  /** Every field's default, deeply frozen; undefined when a field is required. */
  readonly defaults: ObjectPresence<F, ObjectOptions> extends 'default' ? ConfigOf<F> : undefined;
  /** `value` (any subset of the keys, at any depth) laid over `base`, checked and deeply frozen. */
  parse(value: unknown, options?: ParseOptions<ConfigOf<F>>): ConfigOf<F>;
  /** Where `path` sits, refusing as this schema does: for the checks across fields. */
  at(path?: string, source?: string): FieldPath;
}

export function configSchema<const F extends Fields>(fields: F, rules: ConfigRules): ConfigSchema<F> {
  const root = object(fields);
  return Object.freeze({
    fields,
    defaults: root.default as ConfigSchema<F>['defaults'],
    parse(value: unknown, options: ParseOptions<ConfigOf<F>> = {}) {
      const at = fieldPath(rules, options.path ?? '', options.source ?? '');
      return deepFreeze(root.check(value, at, options.base ?? (root.default as ConfigOf<F> | undefined)));
    },
    at(path = '', source = '') {
      return fieldPath(rules, path, source);
    },
  });
}

/** Freezes `value` and everything it holds. */
function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}
