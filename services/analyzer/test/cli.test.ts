import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { encodeTraces } from '@keyscope/otlp';
import { span } from '@keyscope/testkit';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { defaultServeConfig } from '../src/config.ts';
import { DEMO_DB_PATH } from '../src/demo.ts';

const repositoryRoot = fileURLToPath(new URL('../../../', import.meta.url));
const CLI = 'services/analyzer/src/cli.ts';

interface Child {
  process: ChildProcessWithoutNullStreams;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<number | null>;
}

const children: Child[] = [];
afterEach(() => {
  for (const child of children.splice(0)) if (child.process.exitCode === null) child.process.kill('SIGKILL');
});

function keyscope(...args: string[]): Child {
  // Every serve gets a database of its own, away from the repository.
  const db =
    args[0] === 'serve' && !args.includes('--db')
      ? ['--db', join(mkdtempSync(join(tmpdir(), 'keyscope-cli-')), 'k.db')]
      : [];
  return track(spawn(process.execPath, ['--import', 'tsx', CLI, ...args, ...db], { cwd: repositoryRoot }));
}

/** The CLI run from `cwd`, where its relative paths (the demo's database) resolve. */
function keyscopeIn(cwd: string, ...args: string[]): Child {
  return track(
    spawn(process.execPath, ['--import', import.meta.resolve('tsx'), join(repositoryRoot, CLI), ...args], {
      cwd,
    }),
  );
}

function track(child: ChildProcessWithoutNullStreams): Child {
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const handle = { process: child, stdout: () => stdout, stderr: () => stderr, exited };
  children.push(handle);
  return handle;
}

/** Resolves with the lines matching every pattern once all have appeared on stdout. */
async function waitForLines(
  child: Child,
  patterns: RegExp[],
  timeoutMillis = 20_000,
): Promise<RegExpMatchArray[]> {
  const deadline = Date.now() + timeoutMillis;
  while (Date.now() < deadline) {
    const matches = patterns.map((pattern) => child.stdout().match(pattern));
    if (matches.every((match) => match !== null)) return matches as RegExpMatchArray[];
    if (child.process.exitCode !== null) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(
    `keyscope did not print ${patterns.join(', ')}; stdout: ${child.stdout()} stderr: ${child.stderr()}`,
  );
}

const FREE_PORTS = ['--api-port', '0', '--otlp-http-port', '0', '--otlp-grpc-port', '0'];

describe('keyscope serve and demo --help', () => {
  it('shows the defaults of serve: ports, hosts and database', async () => {
    const defaults = defaultServeConfig();
    const child = keyscope('serve', '--help');
    expect(await child.exited).toBe(0);
    const help = child.stdout();
    expect(help).toMatch(/^usage: keyscope serve /);
    expect(help).toMatch(new RegExp(`--api-port N .*${defaults.api.host},\\s+default ${defaults.api.port} `));
    expect(help).toContain(
      `--otlp-http-port N    OTLP/HTTP receiver on ${defaults.otlp.http.host}, default ${defaults.otlp.http.port} `,
    );
    expect(help).toContain(
      `--otlp-grpc-port N    OTLP/gRPC receiver on ${defaults.otlp.grpc.host}, default ${defaults.otlp.grpc.port} `,
    );
    expect(help).toContain(`--db PATH             SQLite database file, default ${defaults.db.path} `);
    expect(help).toContain('--role ROLE           all (default;');
  });

  it('describes the demo in its own text, with its own database and --keep', async () => {
    const child = keyscope('demo', '--help');
    expect(await child.exited).toBe(0);
    const help = child.stdout();
    expect(help).toMatch(/^usage: keyscope demo /);
    expect(help).toContain('simulated');
    expect(help).toContain(`default ${DEMO_DB_PATH}, emptied at start unless --keep`);
    expect(help).toContain('--keep');
    expect(help).not.toContain('--role');
    expect(help).not.toContain('keyscope serve [');
  });

  it('refuses --role for the demo and --keep for serve, naming the flag', async () => {
    const demo = keyscope('demo', '--role', 'ingest');
    const serve = keyscope('serve', '--keep');
    expect([await demo.exited, await serve.exited]).toEqual([2, 2]);
    expect(demo.stderr()).toContain('--role is not a demo option');
    expect(serve.stderr()).toContain('--keep is not a serve option');
  });
});

describe('stopping keyscope', () => {
  it('stops serve on SIGINT with exit status 0 and nothing on stderr', async () => {
    const child = keyscope('serve', ...FREE_PORTS);
    await waitForLines(child, [/^otlp-grpc listening on /m]);
    child.process.kill('SIGINT');
    expect(await child.exited).toBe(0);
    expect(child.stdout()).toMatch(/^keyscope: SIGINT, stopping\nkeyscope: stopped\n$/m);
    expect(child.stderr()).toBe('');
  });

  it('exits 0 when Ctrl-C reaches the whole process group of the pnpm script, shell included', async () => {
    // pnpm runs a script as `sh -c '<script> <arguments>'`; a terminal's Ctrl-C signals every
    // process of the foreground group, the shell as much as keyscope.
    const manifest = JSON.parse(readFileSync(join(repositoryRoot, 'package.json'), 'utf8'));
    const db = join(mkdtempSync(join(tmpdir(), 'keyscope-cli-')), 'k.db');
    const child = track(
      spawn('sh', ['-c', `${manifest.scripts.keyscope} serve --db ${db} ${FREE_PORTS.join(' ')}`], {
        cwd: repositoryRoot,
        detached: true,
      }),
    );
    await waitForLines(child, [/^otlp-grpc listening on /m]);
    const signalled = new Promise<NodeJS.Signals | null>((resolve) =>
      child.process.on('exit', (_code, signal) => resolve(signal)),
    );
    process.kill(-child.process.pid!, 'SIGINT');
    expect(await child.exited).toBe(0);
    expect(await signalled).toBeNull();
    expect(child.stderr()).toBe('');
  });

  it('stops the demo on SIGINT with exit status 0 and nothing on stderr', async () => {
    const child = keyscopeIn(mkdtempSync(join(tmpdir(), 'keyscope-demo-')), 'demo', ...FREE_PORTS);
    await waitForLines(child, [/keeps serving; Ctrl-C stops it$/m]);
    child.process.kill('SIGINT');
    expect(await child.exited).toBe(0);
    expect(child.stderr()).toBe('');
  });
});

describe('keyscope serve --db :memory:', () => {
  it('runs and stops without a word on stderr', async () => {
    const child = keyscope('serve', '--db', ':memory:', ...FREE_PORTS);
    const [api] = await waitForLines(child, [/^api listening on (\S+)$/m, /^otlp-grpc listening on /m]);
    expect((await fetch(`${api![1]}/readyz`)).status).toBe(200);
    child.process.kill('SIGTERM');
    expect(await child.exited).toBe(0);
    expect(child.stderr()).toBe('');
  });
});

describe('keyscope demo', () => {
  /**
   * Runs the demo in `cwd` until it serves: its database line, the incidents it listed, and how
   * many open incidents were already acknowledged; then acknowledges one, for the next run to find
   * if it keeps the database.
   */
  async function demo(cwd: string, ...args: string[]) {
    const child = keyscopeIn(cwd, 'demo', ...FREE_PORTS, ...args);
    const [database, opened, api] = await waitForLines(child, [
      /^demo: database (.*)$/m,
      /keyscope opened (\d+) incidents/,
      /^demo: the web page: +(\S+)\/$/m,
    ]);
    await waitForLines(child, [/keeps serving/]);
    const response = await fetch(`${api![1]}/api/v1/incidents?status=open&limit=500`);
    const { items } = (await response.json()) as { items: { id: string; acknowledged: boolean }[] };
    const ack = await fetch(`${api![1]}/api/v1/incidents/${items[0]!.id}/ack`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(ack.status).toBe(200);
    child.process.kill('SIGINT');
    expect(await child.exited).toBe(0);
    return {
      database: database![1],
      listed: Number(opened![1]),
      acknowledged: items.filter((item) => item.acknowledged).length,
    };
  }

  it('starts from an empty keyscope-demo.db of its own each run, keeps it with --keep, and uses --db as it is', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'keyscope-demo-'));
    writeFileSync(join(cwd, 'keyscope.db'), "serve's database, which the demo leaves alone");

    const first = await demo(cwd);
    expect(first).toMatchObject({
      database: `${DEMO_DB_PATH}, emptied at start (--keep keeps it)`,
      acknowledged: 0,
    });
    expect(first.listed).toBeGreaterThan(0);
    // The incident the first run acknowledged is gone.
    expect(await demo(cwd)).toEqual(first);
    expect(await demo(cwd, '--keep')).toMatchObject({
      database: `${DEMO_DB_PATH}, kept as an earlier run left it`,
      acknowledged: 1,
    });

    expect(await demo(cwd, '--db', 'mine.db')).toMatchObject({ database: 'mine.db, new', acknowledged: 0 });
    expect(await demo(cwd, '--db', 'mine.db')).toMatchObject({
      database: 'mine.db, kept as an earlier run left it',
      acknowledged: 1,
    });
    expect(readFileSync(join(cwd, 'keyscope.db'), 'utf8')).toBe(
      "serve's database, which the demo leaves alone",
    );
  }, 120_000);
});

describe('keyscope CLI', () => {
  it('serves on the ports it picked, accepts a payload, and exits 0 on SIGTERM', async () => {
    const child = keyscope('serve', '--otlp-http-port', '0', '--otlp-grpc-port', '0', '--api-port', '0');
    const [http, grpc, api] = await waitForLines(child, [
      /^otlp-http listening on (http:\/\/127\.0\.0\.1:\d+)$/m,
      /^otlp-grpc listening on (127\.0\.0\.1:\d+)$/m,
      /^api listening on (http:\/\/127\.0\.0\.1:\d+)$/m,
    ]);
    expect(grpc?.[1]).toBeDefined();
    expect((await fetch(`${api?.[1]}/readyz`)).status).toBe(200);
    const response = await fetch(`${http?.[1]}/v1/traces`, {
      method: 'POST',
      body: encodeTraces([span({ key: 'k1' })]),
      headers: { 'content-type': 'application/x-protobuf' },
    });
    expect(response.status).toBe(200);
    child.process.kill('SIGTERM');
    expect(await child.exited).toBe(0);
    expect(child.stdout().match(/listening on/g)).toHaveLength(3);
  });

  it('exits 0 on SIGINT too', async () => {
    const child = keyscope('serve', '--otlp-http-port', '0', '--otlp-grpc-port', '0', '--api-port', '0');
    await waitForLines(child, [/^otlp-grpc listening on /m]);
    child.process.kill('SIGINT');
    expect(await child.exited).toBe(0);
  });

  it('refuses an unknown flag, naming it', async () => {
    const child = keyscope('serve', '--otlp-http-prot', '0');
    expect(await child.exited).toBe(2);
    expect(child.stderr()).toContain('--otlp-http-prot');
    expect(child.stdout()).toBe('');
  });

  it('refuses a port that is not a number, naming the flag', async () => {
    const child = keyscope('serve', '--otlp-grpc-port', 'http');
    expect(await child.exited).toBe(2);
    expect(child.stderr()).toContain('--otlp-grpc-port');
  });

  it('refuses a port above 65535, naming the flag', async () => {
    const child = keyscope('serve', '--api-port', '65536');
    expect(await child.exited).toBe(2);
    expect(child.stderr()).toContain('--api-port');
  });

  it('refuses a config file with an unknown key, naming it', async () => {
    const child = keyscope(
      'serve',
      '--config',
      'services/analyzer/test/fixtures/config-with-unknown-key.yaml',
    );
    expect(await child.exited).toBe(1);
    expect(child.stderr()).toContain('htttp');
  });

  it("analyzes an archive with serve's settings file: its detector section and its mapping file", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'keyscope-analyze-config-'));
    writeFileSync(join(dir, 'mapping.yaml'), 'scopes:\n  - service: ledger\n    scope: region\n');
    writeFileSync(
      join(dir, 'keyscope.yaml'),
      `detector:\n  maxStoresPerFinding: 1\nmapping:\n  file: ${join(dir, 'mapping.yaml')}\n`,
    );
    const recording = 'test/lab/recordings/node-killed-behind-proxy.jsonl.gz';
    const run = async (...args: string[]) => {
      const child = keyscope('analyze', '--format', 'json', ...args, recording);
      expect(await child.exited, child.stderr()).toBe(0);
      return JSON.parse(child.stdout()) as {
        findings: { class: string; stores: string[]; storesTotal: number }[];
        scopes: { service: string; spansSeen: boolean }[];
      };
    };
    const [withDefaults, withSettings] = await Promise.all([
      run(),
      run('--config', join(dir, 'keyscope.yaml')),
    ]);
    const spread = (report: typeof withDefaults) =>
      report.findings.filter((f) => f.class === 'cross_store_duplicate').map((f) => f.stores.length);
    expect(Math.min(...spread(withDefaults))).toBeGreaterThanOrEqual(2);
    expect(new Set(spread(withSettings))).toEqual(new Set([1]));
    expect(withSettings.findings.map((f) => f.storesTotal)).toEqual(
      withDefaults.findings.map((f) => f.storesTotal),
    );
    // The settings file's mapping declares a service the archive never traced: its row says so.
    expect(withSettings.scopes.find((row) => row.service === 'ledger')).toMatchObject({ spansSeen: false });
    expect(withDefaults.scopes.find((row) => row.service === 'ledger')).toBeUndefined();
  }, 60_000);

  it('refuses an analyze settings file with an unknown key, naming it', async () => {
    const child = keyscope(
      'analyze',
      '--config',
      'services/analyzer/test/fixtures/config-with-unknown-key.yaml',
      'test/lab/recordings/partition.jsonl.gz',
    );
    expect(await child.exited).toBe(1);
    expect(child.stderr()).toContain('htttp');
  });

  it('exits 2 with usage for an unknown command', async () => {
    const child = keyscope('srve');
    expect(await child.exited).toBe(2);
    expect(child.stderr()).toContain("unknown command 'srve'");
    expect(child.stderr()).toContain('usage: keyscope');
  });

  it('prints serve usage for --help and exits 0', async () => {
    const child = keyscope('serve', '--help');
    expect(await child.exited).toBe(0);
    expect(child.stdout()).toContain('--otlp-http-port');
  });
});

describe('keyscope serve refusing to start', () => {
  /** One line on stderr, ending in the code: nothing else there. */
  function refusal(child: Child): string {
    expect(child.stderr()).toMatch(/^keyscope serve: [^\n]+ \(KS_[A-Z_]+\)\n$/);
    return child.stderr();
  }

  it('names the database path, the folder to create and --db when the folder does not exist', async () => {
    const folder = join(mkdtempSync(join(tmpdir(), 'keyscope-cli-')), 'missing');
    const db = join(folder, 'k.db');
    const child = keyscope('serve', '--db', db, ...FREE_PORTS);
    expect(await child.exited).toBe(1);
    const line = refusal(child);
    expect(line).toContain('(KS_ANALYZER_DB_FOLDER_MISSING)');
    expect(line).toContain(db);
    expect(line).toContain(`mkdir -p ${folder}`);
    expect(line).toContain('--db');
    expect(existsSync(folder)).toBe(false);
  });

  it('names mapping.file and the working directory it resolved against when the mapping file is missing', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'keyscope-cli-'));
    writeFileSync(join(cwd, 'keyscope.yaml'), 'mapping:\n  file: mappings/payments.yaml\n');
    const child = keyscopeIn(cwd, 'serve', '--config', 'keyscope.yaml', '--db', 'k.db', ...FREE_PORTS);
    expect(await child.exited).toBe(1);
    const line = refusal(child);
    expect(line).toContain('(KS_ANALYZER_MAPPING_UNREADABLE)');
    expect(line).toContain('mapping.file mappings/payments.yaml');
    expect(line).toContain(join(cwd, 'mappings/payments.yaml'));
    expect(readdirSync(cwd)).toEqual(['keyscope.yaml']);
  });

  describe('on a port another process listens on', () => {
    let occupant: Server;
    let port: number;
    beforeAll(async () => {
      occupant = createServer();
      await new Promise<void>((resolve) => occupant.listen(0, '127.0.0.1', resolve));
      port = (occupant.address() as { port: number }).port;
    });
    afterAll(() => new Promise<void>((resolve) => occupant.close(() => resolve())));

    it.each([
      ['api', '--api-port', 'api.port', 'KEYSCOPE_API_PORT'],
      ['otlp-http', '--otlp-http-port', 'otlp.http.port', 'KEYSCOPE_OTLP_HTTP_PORT'],
      ['otlp-grpc', '--otlp-grpc-port', 'otlp.grpc.port', 'KEYSCOPE_OTLP_GRPC_PORT'],
    ])(
      'names the %s listener, its flag, field and variable, and leaves no database behind',
      async (listener, flag, field, variable) => {
        const folder = mkdtempSync(join(tmpdir(), 'keyscope-cli-'));
        const child = keyscope('serve', '--db', join(folder, 'k.db'), ...FREE_PORTS, flag, String(port));
        expect(await child.exited).toBe(1);
        const line = refusal(child);
        expect(line).toContain('(KS_ANALYZER_PORT_IN_USE)');
        expect(line).toContain(`${listener} cannot listen on 127.0.0.1:${port}`);
        for (const setting of [flag, field, variable]) expect(line).toContain(setting);
        expect(readdirSync(folder)).toEqual([]);
      },
    );
  });

  it('names the environment variable an invalid value came from', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'keyscope-cli-'));
    const child = track(
      spawn(process.execPath, ['--import', 'tsx', CLI, 'serve', '--db', join(folder, 'k.db')], {
        cwd: repositoryRoot,
        env: { ...process.env, KEYSCOPE_API_PORT: 'eighty' },
      }),
    );
    expect(await child.exited).toBe(1);
    const line = refusal(child);
    expect(line).toContain('(KS_ANALYZER_CONFIG_INVALID)');
    expect(line).toContain('environment variable KEYSCOPE_API_PORT: api.port');
    expect(readdirSync(folder)).toEqual([]);
  });

  it('says at startup which mapping file it loaded and how many scopes it declares, and flags their silent services', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'keyscope-cli-'));
    writeFileSync(
      join(cwd, 'mapping.yaml'),
      'scopes:\n  - { service: payments, scope: node }\n  - { service: ledger, scope: cluster }\n',
    );
    writeFileSync(join(cwd, 'keyscope.yaml'), 'mapping:\n  file: mapping.yaml\n');
    const child = keyscopeIn(cwd, 'serve', '--config', 'keyscope.yaml', '--db', ':memory:', ...FREE_PORTS);
    const [mapping, api] = await waitForLines(child, [
      /^mapping: .*$/m,
      /^api listening on (\S+)$/m,
      /^otlp-grpc listening on /m,
    ]);
    expect(mapping![0]).toBe(`mapping: ${join(cwd, 'mapping.yaml')}, 2 declared scopes`);
    // Nothing has arrived: the scope report flags both declared services.
    const { items } = (await (await fetch(`${api![1]}/api/v1/scopes`)).json()) as {
      items: { service: string; spansSeen: boolean }[];
    };
    expect(items.map((row) => [row.service, row.spansSeen])).toEqual([
      ['payments', false],
      ['ledger', false],
    ]);
    child.process.kill('SIGTERM');
    expect(await child.exited).toBe(0);
    expect(child.stderr()).toBe('');
  });
});
