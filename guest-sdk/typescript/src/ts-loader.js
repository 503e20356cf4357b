// A Node.js module loader (module customization hooks) that runs TypeScript: `.ts`, `.mts` and
// `.tsx` files are compiled with esbuild's `transform` (types stripped, no type checking) as
// they are imported. Use it through `node --import @atrium/sdk/register ...`.
//
// Resolution follows Node's, plus what TypeScript projects expect: `./x.js` may name `./x.ts`,
// an extensionless `./x` may name `./x.ts` or `./x/index.ts`; and `@atrium/sdk` resolves to
// this SDK when the project has no node_modules (a project inside the Atrium source tree).
//
// esbuild comes from the SDK's own dependencies, else from the project's node_modules, else
// from `ATRIUM_NODE_MODULES`, else from the working directory's node_modules.

import { existsSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const SDK_ROOT = new URL('../', import.meta.url);
const TS = /\.(ts|mts|tsx)$/;

let esbuild;

/**
 * esbuild: from the SDK's dependencies, else from the node_modules of the file being compiled
 * (a project that installed the SDK by a `file:` link has esbuild itself), else
 * `ATRIUM_NODE_MODULES`, else the working directory.
 */
export function loadEsbuild(file) {
  if (esbuild) return esbuild;
  const bases = [fileURLToPath(import.meta.url)];
  if (file) bases.push(file);
  if (process.env.ATRIUM_NODE_MODULES) bases.push(join(process.env.ATRIUM_NODE_MODULES, '_'));
  bases.push(join(process.cwd(), '_'));
  for (const base of bases) {
    try {
      esbuild = createRequire(base)('esbuild');
      return esbuild;
    } catch {
      // next place
    }
  }
  throw new Error(
    'esbuild is not installed: run npm install (the @atrium/sdk package depends on it), or set ATRIUM_NODE_MODULES to a node_modules directory that has it',
  );
}

/**
 * Where `@atrium/sdk[/sub]` points in this SDK, by its package.json `exports` (a `file:` URL),
 * or null when the package exports no such path. The build tool resolves the same way.
 */
export function sdkExport(specifier) {
  const pkg = JSON.parse(readFileSync(new URL('package.json', SDK_ROOT), 'utf8'));
  const sub = specifier === '@atrium/sdk' ? '.' : `./${specifier.slice('@atrium/sdk/'.length)}`;
  const target = pkg.exports?.[sub];
  if (target === undefined) return null;
  const file = typeof target === 'string' ? target : target.default;
  return new URL(file, SDK_ROOT).href;
}

function candidates(url) {
  const path = url.pathname;
  if (/\.js$/.test(path)) return [url.href.replace(/\.js$/, '.ts'), url.href.replace(/\.js$/, '.tsx')];
  if (/\.mjs$/.test(path)) return [url.href.replace(/\.mjs$/, '.mts')];
  if (!/\.[A-Za-z0-9]+$/.test(path)) {
    return [`${url.href}.ts`, `${url.href}.tsx`, `${url.href}.js`, `${url.href}/index.ts`, `${url.href}/index.js`];
  }
  return [];
}

export async function resolve(specifier, context, nextResolve) {
  try {
    return await nextResolve(specifier, context);
  } catch (error) {
    if (specifier === '@atrium/sdk' || specifier.startsWith('@atrium/sdk/')) {
      const url = sdkExport(specifier);
      if (url) return { url, shortCircuit: true };
    }
    const relative = specifier.startsWith('./') || specifier.startsWith('../') || specifier.startsWith('/') || specifier.startsWith('file:');
    if (relative && context.parentURL?.startsWith('file:')) {
      for (const candidate of candidates(new URL(specifier, context.parentURL))) {
        if (existsSync(fileURLToPath(candidate))) return { url: candidate, shortCircuit: true };
      }
    }
    throw error;
  }
}

export async function load(url, context, nextLoad) {
  if (url.startsWith('file:') && TS.test(new URL(url).pathname)) {
    const file = fileURLToPath(url);
    const source = await readFile(file, 'utf8');
    const { code } = await loadEsbuild(file).transform(source, {
      loader: file.endsWith('.tsx') ? 'tsx' : 'ts',
      format: 'esm',
      target: 'es2022',
      sourcemap: 'inline',
      sourcefile: file,
    });
    return { format: 'module', source: code, shortCircuit: true };
  }
  return nextLoad(url, context);
}
