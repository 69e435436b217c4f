import { describe, expect, expectTypeOf, it } from 'vitest';
import {
  boolean,
  type ConfigOf,
  configSchema,
  custom,
  describeValue,
  integer,
  list,
  object,
  oneOf,
  text,
} from '../src/config-schema.ts';
import { type ErrorDefinition, isKeyscopeError, type KeyscopeError } from '../src/keyscope-error.ts';

/** Not declared with defineError: the registry holds only the codes keyscope throws. */
function code(name: string): ErrorDefinition {
  return Object.freeze({ code: name, httpStatus: 400, retryable: false, description: name });
}

const INVALID = code('TEST_CONFIG_INVALID');
const BY_KIND = {
  wrongType: code('TEST_WRONG_TYPE'),
  invalidValue: code('TEST_INVALID_VALUE'),
  unknownKey: code('TEST_UNKNOWN_KEY'),
  missing: code('TEST_MISSING'),
};

const SERVER = {
  mode: oneOf(['fast', 'safe'], { default: 'safe' }),
  http: object({
    host: text({ default: '127.0.0.1', nonEmpty: true }),
    port: integer({ default: 8080, min: 0, max: 65_535 }),
    gzip: boolean({ default: true }),
  }),
  peers: list(
    object({
      url: text({ required: true, accepts: /^https?:\/\//, expected: 'an http(s) URL' }),
      weight: integer({ default: 1 }),
      label: text({ optional: true }),
    }),
    { default: [] },
  ),
  secret: text({ default: '', secret: true, accepts: (value) => value === '' || value.length >= 8 }),
};

const server = configSchema(SERVER, { errors: INVALID });
const strict = configSchema(SERVER, { errors: BY_KIND });

/** The code and message a value is refused with. */
function refusal(run: () => unknown): { code: string; message: string } {
  const thrown = (() => {
    try {
      return run();
    } catch (error) {
      return error;
    }
  })();
  expect(isKeyscopeError(thrown), 'the value is refused with a KeyscopeError').toBe(true);
  return { code: (thrown as KeyscopeError).code, message: (thrown as KeyscopeError).message };
}

describe('config schema', () => {
  it('derives the type from the field specs: readonly, optional fields optional', () => {
    expectTypeOf(server.defaults).toEqualTypeOf<ConfigOf<typeof SERVER>>();
    expectTypeOf(server.defaults.mode).toEqualTypeOf<'fast' | 'safe'>();
    expectTypeOf(server.defaults.http).toEqualTypeOf<{
      readonly host: string;
      readonly port: number;
      readonly gzip: boolean;
    }>();
    expectTypeOf(server.defaults.peers).toEqualTypeOf<
      readonly { readonly url: string; readonly weight: number; readonly label?: string | undefined }[]
    >();
  });

  it('gives every default, frozen all the way down', () => {
    expect(server.defaults).toEqual({
      mode: 'safe',
      http: { host: '127.0.0.1', port: 8080, gzip: true },
      peers: [],
      secret: '',
    });
    expect(Object.isFrozen(server.defaults)).toBe(true);
    expect(Object.isFrozen(server.defaults.http)).toBe(true);
    expect(Object.isFrozen(server.defaults.peers)).toBe(true);
  });

  it('lays any subset of the keys over the defaults, or over a base, and freezes the result', () => {
    const config = server.parse({ http: { port: 0 }, peers: [{ url: 'http://a' }] });
    expect(config.http).toEqual({ host: '127.0.0.1', port: 0, gzip: true });
    expect(config.peers).toEqual([{ url: 'http://a', weight: 1 }]);
    expect(Object.isFrozen(config.peers[0])).toBe(true);
    const layered = server.parse({ http: { gzip: false } }, { base: config });
    expect(layered.http).toEqual({ host: '127.0.0.1', port: 0, gzip: false });
    expect(layered.peers).toBe(config.peers);
  });

  it('refuses an unknown key naming its parent and the known keys', () => {
    expect(refusal(() => server.parse({ http: { prot: 1 } }))).toEqual({
      code: INVALID.code,
      message: "'http' has an unknown key 'prot'; known keys: host, port, gzip",
    });
    expect(refusal(() => server.parse({ nope: 1 })).message).toMatch(/^'\(root\)' has an unknown key 'nope'/);
    expect(refusal(() => strict.parse({ peers: [{ url: 'http://a', wieght: 2 }] }))).toEqual({
      code: BY_KIND.unknownKey.code,
      message: "'peers[0]' has an unknown key 'wieght'; known keys: url, weight, label",
    });
  });

  it('names the field by its path, list indexes included, and what was expected', () => {
    expect(refusal(() => server.parse({ http: { port: 70_000 } })).message).toBe(
      'http.port must be an integer from 0 to 65535, received 70000',
    );
    expect(refusal(() => server.parse({ peers: [{ url: 'http://a' }, { url: 'ftp://b' }] })).message).toBe(
      'peers[1].url must be an http(s) URL, received "ftp://b"',
    );
    expect(refusal(() => server.parse({ mode: 'slow' })).message).toBe(
      'mode must be one of fast, safe, received "slow"',
    );
    expect(refusal(() => server.parse('yes')).message).toBe(
      'the configuration must be a mapping, received "yes"',
    );
    expect(refusal(() => server.parse({ http: [] }, { path: 'server' })).message).toBe(
      'server.http must be a mapping, received a list',
    );
  });

  it('tells a value of the wrong kind from a refused one of the right kind, by code', () => {
    expect(refusal(() => strict.parse({ http: { port: '80' } })).code).toBe(BY_KIND.wrongType.code);
    expect(refusal(() => strict.parse({ http: { port: 1.5 } })).code).toBe(BY_KIND.invalidValue.code);
    expect(refusal(() => strict.parse({ http: { host: ' ' } })).code).toBe(BY_KIND.invalidValue.code);
    expect(refusal(() => strict.parse({ http: { gzip: 'yes' } })).code).toBe(BY_KIND.wrongType.code);
    expect(refusal(() => strict.parse({ mode: 1 })).code).toBe(BY_KIND.wrongType.code);
    expect(refusal(() => strict.parse({ peers: {} })).code).toBe(BY_KIND.wrongType.code);
  });

  it('refuses a required field left out, and leaves an optional one out', () => {
    expect(refusal(() => strict.parse({ peers: [{ weight: 2 }] }))).toEqual({
      code: BY_KIND.missing.code,
      message: 'peers[0].url is required',
    });
    expect(strict.parse({ peers: [{ url: 'http://a' }] }).peers[0]).not.toHaveProperty('label');
    expect(strict.parse({ peers: [{ url: 'http://a', label: 'x' }] }).peers[0]?.label).toBe('x');
  });

  it('shows the length of a secret, never its text', () => {
    const { message } = refusal(() => server.parse({ secret: 'hunter2' }));
    expect(message).toBe('secret must be a string, received 7 characters');
    expect(message).not.toContain('hunter2');
  });

  it('prefixes every message with the source it is given', () => {
    expect(refusal(() => server.parse({ http: { port: -1 } }, { source: 'server.yaml' })).message).toMatch(
      /^server\.yaml: http\.port must be/,
    );
    expect(server.at('http.port', 'server.yaml').refuse(INVALID, 'taken').message).toBe('server.yaml: taken');
  });

  it('refuses a blank section unless blank sections keep their values', () => {
    expect(refusal(() => server.parse({ http: null })).message).toBe('http must be a mapping, received null');
    const lenient = configSchema(SERVER, { errors: INVALID, blankSectionsKeepValues: true });
    expect(lenient.parse({ http: null }).http).toEqual(server.defaults.http);
    expect(refusal(() => lenient.parse({ http: { port: null } })).message).toMatch(/^http\.port must be/);
  });

  it('speaks of objects, a root name and unknown keys in the words it is given', () => {
    const options = configSchema(
      { retries: integer({ default: 3 }), tuning: object({ depth: integer({ default: 1 }) }) },
      {
        errors: INVALID,
        objects: 'object',
        rootName: 'the options',
        unknownKeyMessage: (parent, key) => `${parent ? `${parent}.` : ''}${key} is not an option`,
      },
    );
    expect(refusal(() => options.parse([])).message).toBe('the options must be an object, received a list');
    expect(refusal(() => options.parse({ tuning: { width: 1 } })).message).toBe(
      'tuning.width is not an option',
    );
    expect(refusal(() => options.parse({ retries: {} })).message).toBe(
      'retries must be a positive integer, received an object',
    );
  });

  it('runs a custom check where the kinds do not fit, with the field path to refuse at', () => {
    const even = configSchema(
      {
        count: custom(
          (value, at) => {
            if (typeof value !== 'number' || value % 2 !== 0) throw at.invalid('an even number', value);
            return value;
          },
          { default: 2 },
        ),
      },
      { errors: INVALID },
    );
    expect(even.parse({ count: 4 }).count).toBe(4);
    expect(refusal(() => even.parse({ count: 3 }, { path: 'pairs' })).message).toBe(
      'pairs.count must be an even number, received 3',
    );
  });
});

describe('describeValue', () => {
  it('quotes text, writes numbers as they are and names containers by kind', () => {
    expect([undefined, null, 'x', 3, true, [1], { a: 1 }].map((value) => describeValue(value))).toEqual([
      'nothing',
      'null',
      '"x"',
      '3',
      'true',
      'a list',
      'a mapping',
    ]);
    expect(describeValue({}, 'object')).toBe('an object');
  });
});
