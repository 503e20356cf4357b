// atrium-sdk-build: a TypeScript (or JavaScript) app project into a WebAssembly component.
//
//   node <sdk>/bin/atrium-sdk-build.mjs [--project DIR] [--out FILE] [--wit DIR]
//
// 1. validates the manifest natively with the validator module (findings printed like
//    `atrium lint`: `file:line:column: severity[code] path: message`);
// 2. runs the entry module once on Node.js, which checks every registration and records the
//    manifests the app loads;
// 3. bundles the entry, the SDK and the embedded manifests (text and normalised form) into one
//    ES module with esbuild;
// 4. runs componentize-js (world `app` of the WIT) and writes the component.
//
// Exit codes: 0 built (the component's path on stdout), 1 a manifest, registration or build
// error (the message on stderr). Nothing is installed: esbuild and componentize-js are found
// from the project's node_modules, else from ATRIUM_NODE_MODULES, else from the SDK's own.

import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync, mkdirSync, renameSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { createRequire, register } from 'node:module';
import { tmpdir } from 'node:os';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

import { sdkExport } from '../ts-loader.js';
import { checkManifest, validatorPath } from '../validator.js';

/** The SDK's directory (the package root). */
export const SDK_DIR = fileURLToPath(new URL('../../', import.meta.url));

/** The versions the SDK is built and tested with. */
export const TOOLCHAIN = {
  esbuild: '0.28.2',
  '@bytecodealliance/componentize-js': '0.23.0',
  '@bytecodealliance/preview2-shim': '0.26.1',
};

const MANIFEST_NAMES = ['atrium.app.yaml', 'atrium.app.yml', 'atrium.app.json'];
const ENTRY_NAMES = ['src/app.ts', 'src/app.js', 'src/app.mts', 'src/app.mjs'];
const LOADED = Symbol.for('atrium.sdk.loadedManifests');
const APPS = Symbol.for('atrium.sdk.apps');

/** A build that cannot go on; `lines` are printed before the message (findings). */
export class BuildError extends Error {
  constructor(message, lines = []) {
    super(message);
    this.name = 'BuildError';
    this.lines = lines;
  }
}

const USAGE = `usage: atrium-sdk-build [--project DIR] [--out FILE] [--wit DIR] [--print-toolchain]

Builds the Atrium app in DIR (default .) into a WebAssembly component at FILE
(default DIR/build/app.wasm). The entry is src/app.ts (or src/app.js, or package.json's
"atrium": {"entry": ...}); the manifest atrium.app.yaml (or "atrium": {"manifest": ...}).

Environment: ATRIUM_MANIFEST_VALIDATOR (the validator module, else validator.wasm in the
package), ATRIUM_NODE_MODULES (a node_modules with esbuild and componentize-js, when the
project has none), ATRIUM_WIT (the WIT directory, when --wit is not given).

--print-toolchain prints what a build of DIR would be made with (the SDK and the digest of its
files, the WIT, the validator, esbuild and componentize-js) as one JSON line, and builds
nothing: \`atrium build\` counts it among the build's inputs.`;

/** Parses the command line: `{project, out, wit}` or `{help: true}`. */
export function parseArgs(argv) {
  const options = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '-h' || arg === '--help') return { help: true };
    if (arg === '--print-toolchain') {
      options.printToolchain = true;
      continue;
    }
    const eq = arg.indexOf('=');
    const [flag, inline] = arg.startsWith('--') && eq > 0 ? [arg.slice(0, eq), arg.slice(eq + 1)] : [arg, undefined];
    const key = { '--project': 'project', '--out': 'out', '--wit': 'wit' }[flag];
    if (!key) throw new BuildError(`unknown argument \`${arg}\`\n\n${USAGE}`);
    const value = inline ?? argv[++i];
    if (value === undefined || value === '') throw new BuildError(`${flag} needs a value`);
    options[key] = value;
  }
  return options;
}

function readPackage(dir) {
  const file = join(dir, 'package.json');
  if (!existsSync(file)) return {};
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch (e) {
    throw new BuildError(`${file} is not valid JSON: ${e.message}`);
  }
}

/** A finding as `atrium lint` prints it: `file:line:column: severity[code] path: message`. */
export function formatFinding(f, file = f.file) {
  const location = f.line != null ? (f.column != null ? `${file}:${f.line}:${f.column}` : `${file}:${f.line}`) : file;
  return `${location}: ${f.severity}[${f.code}] ${f.path ? f.path : '(file)'}: ${f.message}`;
}

function display(path) {
  const rel = relative(process.cwd(), path);
  return rel && !rel.startsWith('..') ? rel : path;
}

/**
 * The WIT directory: --wit, else ATRIUM_WIT, else (in the Atrium source tree) the tree's wit/,
 * else the wit/ shipped in the package. Inside the source tree the tree's own WIT wins over a
 * copy that `npm install` may have left in the package (scripts/prepare.mjs), which could be
 * stale.
 */
export function findWit(flag) {
  const named = flag ?? process.env.ATRIUM_WIT;
  const tree = resolve(SDK_DIR, '../../wit');
  const inTree = existsSync(join(tree, 'platform.wit')) && existsSync(resolve(SDK_DIR, '../manifest-wasm'));
  const candidates = named ? [resolve(named)] : inTree ? [tree, join(SDK_DIR, 'wit')] : [join(SDK_DIR, 'wit'), tree];
  for (const dir of candidates) {
    if (existsSync(dir) && statSync(dir).isDirectory() && readdirSync(dir).some((f) => f.endsWith('.wit'))) return dir;
  }
  throw new BuildError(
    named
      ? `${candidates[0]} is not a WIT directory (it has no .wit file)`
      : `the WIT is not available: pass --wit DIR or set ATRIUM_WIT (looked at ${candidates.join(' and ')})`,
  );
}

/** node_modules directories to look in: the project's (and its parents'), ATRIUM_NODE_MODULES, the SDK's. */
function moduleDirs(projectDir) {
  const dirs = [];
  for (let dir = projectDir; ; dir = dirname(dir)) {
    dirs.push(join(dir, 'node_modules'));
    if (dirname(dir) === dir) break;
  }
  if (process.env.ATRIUM_NODE_MODULES) dirs.push(resolve(process.env.ATRIUM_NODE_MODULES));
  for (let dir = SDK_DIR; ; dir = dirname(dir)) {
    dirs.push(join(dir, 'node_modules'));
    if (dirname(dir) === dir) break;
  }
  return [...new Set(dirs)];
}

function missingToolchain(name) {
  return new BuildError(
    `${name} is not installed: run npm install in the project (@atrium/sdk depends on esbuild ${TOOLCHAIN.esbuild} and @bytecodealliance/componentize-js ${TOOLCHAIN['@bytecodealliance/componentize-js']}), or set ATRIUM_NODE_MODULES to a node_modules directory that has them`,
  );
}

/** A package's directory and version, from the first node_modules that has it. */
function findPackage(name, dirs) {
  for (const dir of dirs) {
    const pkg = join(dir, name, 'package.json');
    if (existsSync(pkg)) {
      const meta = JSON.parse(readFileSync(pkg, 'utf8'));
      return { dir: dirname(pkg), version: meta.version, meta };
    }
  }
  return null;
}

/**
 * componentize-js runs its WebAssembly tools on `@bytecodealliance/preview2-shim`, whose
 * releases since 0.18 preopen no directory by default: without `/` they cannot read the WIT or
 * the bundle ("No such file or directory"). The shim it resolves is given `/` here; an older
 * shim that preopens `/` itself has no `_setPreopens` and needs nothing.
 */
async function openFileSystem(componentizeDir) {
  let shim;
  try {
    const resolver = createRequire(join(componentizeDir, 'package.json'));
    shim = await import(pathToFileURL(resolver.resolve('@bytecodealliance/preview2-shim/filesystem')).href);
  } catch {
    throw missingToolchain('@bytecodealliance/preview2-shim (imported by componentize-js)');
  }
  if (typeof shim._setPreopens === 'function') shim._setPreopens({ '/': '/' });
}

/** esbuild and componentize-js, by normal resolution: `{esbuild, componentize, versions}`. */
export async function loadToolchain(projectDir) {
  const dirs = moduleDirs(projectDir);
  const esbuildPkg = findPackage('esbuild', dirs);
  if (!esbuildPkg) throw missingToolchain('esbuild');
  const componentizePkg = findPackage('@bytecodealliance/componentize-js', dirs);
  if (!componentizePkg) throw missingToolchain('componentize-js (@bytecodealliance/componentize-js)');
  const esbuild = createRequire(join(esbuildPkg.dir, 'package.json'))('esbuild');
  const exports = componentizePkg.meta.exports;
  const sugar = exports && typeof exports === 'object' && !Object.keys(exports).some((k) => k.startsWith('.'));
  const exported = sugar ? exports : exports?.['.'] ?? exports;
  const main = typeof exported === 'string' ? exported : exported?.import ?? exported?.default ?? componentizePkg.meta.main;
  const { componentize } = await import(pathToFileURL(join(componentizePkg.dir, main)).href);
  await openFileSystem(componentizePkg.dir);
  return {
    esbuild,
    componentize,
    versions: { esbuild: esbuildPkg.version, '@bytecodealliance/componentize-js': componentizePkg.version },
  };
}

/** The manifest file of the project. */
function findManifest(projectDir, pkg) {
  const named = pkg.atrium?.manifest;
  if (named) {
    const path = resolve(projectDir, named);
    if (!existsSync(path)) throw new BuildError(`package.json names the manifest ${named}, which does not exist in ${projectDir}`);
    return path;
  }
  for (const name of MANIFEST_NAMES) {
    if (existsSync(join(projectDir, name))) return join(projectDir, name);
  }
  throw new BuildError(`${projectDir} has no atrium.app.yaml (or "atrium": {"manifest": ...} in package.json)`);
}

/** The entry module of the project. */
function findEntry(projectDir, pkg) {
  const named = pkg.atrium?.entry;
  if (named) {
    const path = resolve(projectDir, named);
    if (!existsSync(path)) throw new BuildError(`package.json names the entry ${named}, which does not exist in ${projectDir}`);
    return path;
  }
  for (const name of ENTRY_NAMES) {
    if (existsSync(join(projectDir, name))) return join(projectDir, name);
  }
  throw new BuildError(`${projectDir} has no src/app.ts (or src/app.js, or "atrium": {"entry": ...} in package.json)`);
}

/** Step 1: the manifest, validated by the validator module. */
function validate(manifestPath) {
  let path;
  try {
    path = validatorPath();
  } catch (e) {
    throw new BuildError(e.message);
  }
  const text = readFileSync(manifestPath, 'utf8');
  let answer;
  try {
    answer = checkManifest(basename(manifestPath), text);
  } catch (e) {
    throw new BuildError(`the validator module ${path} failed: ${e.message}`);
  }
  const shown = display(manifestPath);
  const lines = (answer.findings ?? []).map((f) => formatFinding(f, shown));
  if (!answer.valid) {
    const errors = (answer.findings ?? []).filter((f) => f.severity === 'error').length;
    throw new BuildError(`${shown} is invalid (${errors} error${errors === 1 ? '' : 's'}): nothing was built`, lines);
  }
  return { text, manifest: answer.manifest, warnings: lines };
}

let loaderRegistered = false;

/**
 * Step 2: runs the entry once on Node.js (TypeScript through the SDK's loader), in the
 * project's directory: every registration is checked and the manifests the app loads are
 * recorded. Answers them: `[{spec, path, file, text, manifest}]`.
 */
async function runEntry(entry, projectDir) {
  if (!loaderRegistered) {
    register(new URL('../ts-loader.js', import.meta.url).href, import.meta.url);
    loaderRegistered = true;
  }
  const loaded = (globalThis[LOADED] ??= []);
  const apps = (globalThis[APPS] ??= []);
  const before = loaded.length;
  const appsBefore = apps.length;
  const cwd = process.cwd();
  process.chdir(projectDir);
  let exported;
  try {
    exported = await import(`${pathToFileURL(entry).href}?atrium-build=${Date.now()}`);
  } catch (e) {
    if (e?.name === 'RegistrationError') throw new BuildError(`registration: ${e.message}`);
    if (e?.name === 'ManifestError') {
      throw new BuildError(`the app's manifest could not be loaded: ${e.message}`, (e.findings ?? []).map((f) => formatFinding(f)));
    }
    throw new BuildError(`the entry module ${display(entry)} failed on Node.js: ${e?.stack ?? e}`);
  } finally {
    process.chdir(cwd);
  }
  // The component serves the entry's `default` or `app` export, else the one App it made.
  const isApp = (value) => typeof value?.registration === 'function' && typeof value?.manifestText === 'string';
  const made = apps.length - appsBefore;
  if (!isApp(exported.default) && !isApp(exported.app) && made !== 1) {
    throw new BuildError(
      made === 0
        ? `the entry module ${display(entry)} made no App: call App.fromManifest('atrium.app.yaml'), register the handlers and export the app (export default app)`
        : `the entry module ${display(entry)} made ${made} Apps and exports none of them: export the one to serve (export default app)`,
    );
  }
  return loaded.slice(before);
}

/** Step 3: one ES module: the component glue, the entry, the SDK, the embedded manifests. */
export async function bundle(esbuild, entry, embedded) {
  const glue = join(SDK_DIR, 'src/component.js');
  // The entry is required (not imported) so that a failure while it registers is caught and
  // reported by every export, instead of trapping while the component is pre-initialised.
  const wrapper = [
    `import { exportApp } from ${JSON.stringify(glue)};`,
    'let entry, failure;',
    `try { entry = require(${JSON.stringify(entry)}); } catch (e) { failure = e; }`,
    'const exported = exportApp(entry, failure);',
    'export const handlers = exported.handlers;',
    'export const incomingHandler = exported.incomingHandler;',
    '',
  ].join('\n');
  const sdkPlugin = {
    name: 'atrium-sdk',
    setup(build) {
      // Every @atrium/sdk import is this SDK: the glue and the app share one App class.
      build.onResolve({ filter: /^@atrium\/sdk(\/.*)?$/ }, (args) => {
        const url = sdkExport(args.path);
        if (!url) return { errors: [{ text: `@atrium/sdk has no export ${args.path}` }] };
        return { path: fileURLToPath(url) };
      });
    },
  };
  const banner = `globalThis.__atriumEmbeddedManifests = ${JSON.stringify(embedded)};`;
  let result;
  try {
    result = await esbuild.build({
      stdin: { contents: wrapper, resolveDir: dirname(entry), sourcefile: 'atrium-component-entry.js', loader: 'js' },
      bundle: true,
      write: false,
      format: 'esm',
      platform: 'neutral',
      target: 'es2022',
      conditions: ['atrium-component'],
      mainFields: ['module', 'main'],
      resolveExtensions: ['.ts', '.tsx', '.mts', '.js', '.mjs', '.json'],
      external: ['atrium:*', 'wasi:*'],
      banner: { js: banner },
      plugins: [sdkPlugin],
      logLevel: 'silent',
      legalComments: 'none',
    });
  } catch (e) {
    const lines = (e.errors ?? []).map((m) =>
      m.location ? `${m.location.file}:${m.location.line}:${m.location.column + 1}: error: ${m.text}` : `error: ${m.text}`,
    );
    throw new BuildError('bundling with esbuild failed (a module a component cannot load, such as node:fs, or a syntax error)', lines);
  }
  return result.outputFiles[0].text;
}

/** The SHA-256 of files (sorted by path relative to `base`, with their contents), or of one file. */
function treeDigest(paths, base) {
  const files = [];
  const visit = (path) => {
    if (!existsSync(path)) return;
    const name = basename(path);
    if (name.startsWith('.') || name === 'node_modules') return;
    if (statSync(path).isDirectory()) {
      for (const child of readdirSync(path)) visit(join(path, child));
    } else {
      files.push(path);
    }
  };
  for (const path of paths) visit(path);
  const hash = createHash('sha256');
  for (const file of files.map((f) => [relative(base, f).split('\\').join('/'), f]).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    hash.update(`\0file\0${file[0]}\0`);
    hash.update(createHash('sha256').update(readFileSync(file[1])).digest());
  }
  return `sha256:${hash.digest('hex')}`;
}

/**
 * What a build of `project` is made with, for `--print-toolchain`: the SDK (name, version,
 * digest of its files), the WIT and the validator module (digests), and the versions of
 * esbuild and componentize-js it would run. Throws `BuildError` when one is missing.
 */
export function toolchainIdentity({ project = '.', wit } = {}) {
  const projectDir = resolve(project);
  const dirs = moduleDirs(projectDir);
  const sdk = readPackage(SDK_DIR);
  const witDir = findWit(wit);
  const validator = validatorPath();
  const identity = {
    sdk: `${sdk.name} ${sdk.version}`,
    sdk_files: treeDigest(['src', 'bin', 'register.mjs'].map((p) => join(SDK_DIR, p)), SDK_DIR),
    wit: treeDigest([witDir], witDir),
    validator: treeDigest([validator], dirname(validator)),
  };
  for (const name of ['esbuild', '@bytecodealliance/componentize-js']) {
    const found = findPackage(name, dirs);
    if (!found) throw missingToolchain(name);
    identity[name] = found.version;
  }
  return identity;
}

/**
 * Builds the project: `{project = '.', out = <project>/build/app.wasm, wit}`. Answers
 * `{out, size, seconds, warnings, versions}`; throws `BuildError`.
 */
export async function build({ project = '.', out, wit } = {}) {
  const started = Date.now();
  const projectDir = resolve(project);
  if (!existsSync(projectDir) || !statSync(projectDir).isDirectory()) {
    throw new BuildError(`the project directory ${projectDir} does not exist`);
  }
  const outPath = resolve(out ?? join(projectDir, 'build/app.wasm'));
  const pkg = readPackage(projectDir);
  const manifestPath = findManifest(projectDir, pkg);
  const { text, manifest, warnings } = validate(manifestPath);
  const entry = findEntry(projectDir, pkg);
  const witDir = findWit(wit);
  const toolchain = await loadToolchain(projectDir);

  const loaded = await runEntry(entry, projectDir);
  const embedded = [{ spec: basename(manifestPath), file: basename(manifestPath), text, manifest }];
  for (const m of loaded) {
    if (!embedded.some((e) => e.spec === m.spec && e.text === m.text)) {
      embedded.push({ spec: m.spec, file: m.file, text: m.text, manifest: m.manifest });
    }
  }
  const source = await bundle(toolchain.esbuild, entry, embedded);

  const work = mkdtempSync(join(tmpdir(), 'atrium-sdk-build-'));
  try {
    const sourcePath = join(work, 'app.js');
    writeFileSync(sourcePath, source);
    let component;
    try {
      ({ component } = await toolchain.componentize({ sourcePath, witPath: witDir, worldName: 'app' }));
    } catch (e) {
      throw new BuildError(`componentize-js failed: ${e?.message ?? e}`);
    }
    mkdirSync(dirname(outPath), { recursive: true });
    const partial = `${outPath}.${process.pid}.partial`;
    writeFileSync(partial, component);
    renameSync(partial, outPath);
    return {
      out: outPath,
      size: component.length,
      seconds: (Date.now() - started) / 1000,
      warnings,
      versions: toolchain.versions,
    };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** The command: answers the exit code (0 built, 1 failed). */
export async function main(argv, { stdout = process.stdout, stderr = process.stderr } = {}) {
  try {
    const options = parseArgs(argv);
    if (options.help) {
      stdout.write(`${USAGE}\n`);
      return 0;
    }
    if (options.printToolchain) {
      stdout.write(`${JSON.stringify(toolchainIdentity(options))}\n`);
      return 0;
    }
    const result = await build(options);
    for (const line of result.warnings) stderr.write(`${line}\n`);
    for (const [name, version] of Object.entries(TOOLCHAIN)) {
      if (name in result.versions && result.versions[name] !== version) {
        stderr.write(`warning: ${name} ${result.versions[name]} is used; the SDK is tested with ${version}\n`);
      }
    }
    stdout.write(`${result.out}\n`);
    return 0;
  } catch (e) {
    if (e instanceof BuildError) {
      for (const line of e.lines) stderr.write(`${line}\n`);
      stderr.write(`error: ${e.message}\n`);
    } else {
      stderr.write(`error: the build failed unexpectedly: ${e?.stack ?? e}\n`);
    }
    return 1;
  }
}
