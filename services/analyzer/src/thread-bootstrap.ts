/**
 * The code a worker thread evaluates to load `name`, a module beside `callerUrl` (the caller's
 * `import.meta.url`). From the TypeScript sources (`pnpm keyscope`, through tsx) it registers tsx
 * first and imports `name.ts`; in the packed CLI the caller is bundled, and scripts/pack-cli.ts
 * puts the thread's own bundle, `name.js`, beside it.
 */
export function threadBootstrap(callerUrl: string, name: string): string {
  if (!callerUrl.endsWith('.ts')) {
    return `import(${JSON.stringify(new URL(`./${name}.js`, callerUrl).href)});`;
  }
  const tsx = import.meta.resolve('tsx/esm/api');
  const entry = new URL(`./${name}.ts`, callerUrl).href;
  return `import(${JSON.stringify(tsx)}).then(({ register }) => { register(); return import(${JSON.stringify(entry)}); });`;
}
