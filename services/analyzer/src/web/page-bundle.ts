import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

/** The page's script and stylesheet, bundled, with a digest of both for ETags. */
export interface PageBundle {
  readonly script: string;
  readonly stylesheet: string;
  readonly etag: string;
}

const PAGE_DIR = fileURLToPath(new URL('./page/', import.meta.url));

/**
 * Where the packed CLI keeps the page, bundled when it was packed (scripts/pack-cli.ts writes these
 * two files beside the CLI's bundle). A checkout has none, and bundles the page from its sources.
 */
const PREBUILT_DIR = new URL('./web-page/', import.meta.url);
export const PREBUILT_SCRIPT = 'main.js';
export const PREBUILT_STYLESHEET = 'styles.css';

let bundling: Promise<PageBundle> | undefined;

/**
 * The page bundled when keyscope was packed, or else bundled from its TypeScript sources with
 * esbuild, in memory, once per process: a checkout has no build step to forget, and every server in
 * the process shares the result. A failed build is not cached, so a fixed source is picked up by the
 * next request.
 */
export function pageBundle(): Promise<PageBundle> {
  bundling ??= loadPage().catch((error: unknown) => {
    bundling = undefined;
    throw error;
  });
  return bundling;
}

async function loadPage(): Promise<PageBundle> {
  return (await readPrebuiltPage()) ?? bundlePage();
}

async function readPrebuiltPage(): Promise<PageBundle | undefined> {
  try {
    const [script, stylesheet] = await Promise.all([
      readFile(new URL(PREBUILT_SCRIPT, PREBUILT_DIR), 'utf8'),
      readFile(new URL(PREBUILT_STYLESHEET, PREBUILT_DIR), 'utf8'),
    ]);
    return withEtag(script, stylesheet);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

/** Bundles the page from its sources. esbuild is loaded here only: the packed CLI runs without it. */
export async function bundlePage(): Promise<PageBundle> {
  const { build } = await import('esbuild');
  const result = await build({
    entryPoints: [`${PAGE_DIR}main.ts`, `${PAGE_DIR}styles.css`],
    bundle: true,
    write: false,
    outdir: '/page',
    format: 'iife',
    platform: 'browser',
    target: ['es2022'],
    minify: true,
    legalComments: 'none',
    logLevel: 'silent',
  });
  const text = (suffix: string) => {
    const file = result.outputFiles.find((output) => output.path.endsWith(suffix));
    if (file === undefined) throw new Error(`the page bundle has no ${suffix} output`);
    return file.text;
  };
  return withEtag(text('main.js'), text('styles.css'));
}

function withEtag(script: string, stylesheet: string): PageBundle {
  const etag = `"${createHash('sha256').update(script).update(stylesheet).digest('base64url').slice(0, 22)}"`;
  return { script, stylesheet, etag };
}
