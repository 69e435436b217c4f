import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

/** The page's script and stylesheet, bundled, with a digest of both for ETags. */
export interface PageBundle {
  readonly script: string;
  readonly stylesheet: string;
  readonly etag: string;
}

const PAGE_DIR = fileURLToPath(new URL('./page/', import.meta.url));

let bundling: Promise<PageBundle> | undefined;

/**
 * Bundles the page from its TypeScript sources with esbuild, in memory, once per process: there is
 * no build step to forget, and every server in the process shares the result. A failed build is not
 * cached, so a fixed source is picked up by the next request.
 */
export function pageBundle(): Promise<PageBundle> {
  bundling ??= bundlePage().catch((error: unknown) => {
    bundling = undefined;
    throw error;
  });
  return bundling;
}

async function bundlePage(): Promise<PageBundle> {
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
  const script = text('main.js');
  const stylesheet = text('styles.css');
  const etag = `"${createHash('sha256').update(script).update(stylesheet).digest('base64url').slice(0, 22)}"`;
  return { script, stylesheet, etag };
}
