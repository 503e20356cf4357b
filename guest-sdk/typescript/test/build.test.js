// atrium-sdk-build: its contract (flags, defaults, exit codes, messages on stderr) and its
// errors: no validator, an invalid manifest (findings as atrium lint prints them), no entry,
// a registration error, no toolchain. One real build runs when ATRIUM_NODE_MODULES names the
// toolchain (esbuild and componentize-js).

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';

const BIN = fileURLToPath(new URL('../bin/atrium-sdk-build.mjs', import.meta.url));
const FIXTURE = fileURLToPath(new URL('fixtures/atrium.app.yaml', import.meta.url));
const work = mkdtempSync(join(tmpdir(), 'atrium-sdk-build-test-'));
after(() => rmSync(work, { recursive: true, force: true }));

const APP = `import { App } from '@atrium/sdk';
const app = App.fromManifest('atrium.app.yaml').tool('ping_tool', async (_ctx, args: Record<string, unknown>) => ({ pong: args }));
export default app;
`;

/** A project in a fresh directory: the fixture manifest and `src/app.ts`. */
function project(name, { manifest = readFileSync(FIXTURE, 'utf8'), app = APP } = {}) {
  const dir = join(work, name);
  mkdirSync(join(dir, 'src'), { recursive: true });
  if (manifest !== null) writeFileSync(join(dir, 'atrium.app.yaml'), manifest);
  if (app !== null) writeFileSync(join(dir, 'src/app.ts'), app);
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name, type: 'module', private: true }));
  return dir;
}

function run(args, env = {}) {
  const merged = { ...process.env, ...env };
  for (const [k, v] of Object.entries(env)) if (v === undefined) delete merged[k];
  const out = spawnSync(process.execPath, [BIN, ...args], { env: merged, encoding: 'utf8', cwd: work });
  return { code: out.status, stdout: out.stdout, stderr: out.stderr };
}

test('without the validator module: exit 1 naming ATRIUM_MANIFEST_VALIDATOR', () => {
  const dir = project('no-validator');
  const out = run(['--project', dir], { ATRIUM_MANIFEST_VALIDATOR: undefined });
  assert.equal(out.code, 1, out.stderr);
  assert.match(out.stderr, /^error: the manifest validator module is not available: set ATRIUM_MANIFEST_VALIDATOR/m);
  assert.equal(out.stdout, '');
  const named = run(['--project', dir], { ATRIUM_MANIFEST_VALIDATOR: join(work, 'nothing.wasm') });
  assert.equal(named.code, 1);
  assert.match(named.stderr, /ATRIUM_MANIFEST_VALIDATOR names .*nothing\.wasm, which is not a file/);
  assert.ok(!existsSync(join(dir, 'build')));
});

test('an invalid manifest: exit 1 with the findings as atrium lint prints them', { skip: !process.env.ATRIUM_MANIFEST_VALIDATOR && 'ATRIUM_MANIFEST_VALIDATOR is not set' }, () => {
  const text = readFileSync(FIXTURE, 'utf8').replace('app_id: sdk-fixture', 'app_id: Not_A_Slug').replace('version: 0.1.0', 'colour: blue\nversion: 0.1.0');
  const dir = project('invalid', { manifest: text });
  const out = run(['--project', dir, '--out', join(dir, 'out.wasm')]);
  assert.equal(out.code, 1, out.stderr);
  const lines = out.stderr.trim().split('\n');
  assert.ok(lines.some((l) => /^.*atrium\.app\.yaml:4:\d+: error\[pattern\] app_id: `Not_A_Slug` is not a valid app slug/.test(l)), out.stderr);
  assert.ok(lines.some((l) => /atrium\.app\.yaml:5:\d+: error\[unknown_field\] colour: /.test(l)), out.stderr);
  assert.match(lines.at(-1), /^error: .*atrium\.app\.yaml is invalid \(2 errors\): nothing was built$/);
  assert.ok(!existsSync(join(dir, 'out.wasm')));
});

test('a project without a manifest or an entry: exit 1 saying which', { skip: !process.env.ATRIUM_MANIFEST_VALIDATOR && 'ATRIUM_MANIFEST_VALIDATOR is not set' }, () => {
  const noManifest = project('no-manifest', { manifest: null });
  assert.match(run(['--project', noManifest]).stderr, /has no atrium\.app\.yaml/);
  const noEntry = project('no-entry', { app: null });
  const out = run(['--project', noEntry]);
  assert.equal(out.code, 1);
  assert.match(out.stderr, /has no src\/app\.ts \(or src\/app\.js, or "atrium": \{"entry": \.\.\.\} in package\.json\)/);
  assert.match(run(['--project', join(work, 'missing-dir')]).stderr, /error: the project directory .*missing-dir does not exist/);
});

test('usage: --help, unknown flags, a flag without its value', () => {
  const help = run(['--help']);
  assert.equal(help.code, 0);
  assert.match(help.stdout, /^usage: atrium-sdk-build \[--project DIR\] \[--out FILE\] \[--wit DIR\]/);
  const unknown = run(['--fast']);
  assert.equal(unknown.code, 1);
  assert.match(unknown.stderr, /^error: unknown argument `--fast`/);
  assert.match(run(['--out']).stderr, /^error: --out needs a value/);
});

test('no toolchain: exit 1 saying what to install', { skip: !process.env.ATRIUM_MANIFEST_VALIDATOR && 'ATRIUM_MANIFEST_VALIDATOR is not set' }, () => {
  const dir = project('no-toolchain');
  const sdkModules = fileURLToPath(new URL('../node_modules', import.meta.url));
  if (existsSync(sdkModules)) return; // the SDK has its own dependencies installed
  const out = run(['--project', dir], { ATRIUM_NODE_MODULES: undefined });
  assert.equal(out.code, 1);
  assert.match(out.stderr, /error: esbuild is not installed: run npm install in the project .* or set ATRIUM_NODE_MODULES/);
});

const toolchain = process.env.ATRIUM_MANIFEST_VALIDATOR && process.env.ATRIUM_NODE_MODULES;

test('a registration error: exit 1 with the rule\'s message', { skip: !toolchain && 'ATRIUM_NODE_MODULES is not set' }, () => {
  const dir = project('bad-registration', {
    app: "import { App } from '@atrium/sdk';\nexport default App.fromManifest('atrium.app.yaml').onUninstall(async () => {});\n",
  });
  const out = run(['--project', dir]);
  assert.equal(out.code, 1, out.stderr);
  assert.equal(out.stderr.trim(), 'error: registration: cannot register on_uninstall: lifecycle.on_uninstall is not true in the manifest');
  const sync = project('sync-handler', {
    app: "import { App } from '@atrium/sdk';\nexport default App.fromManifest('atrium.app.yaml').tool('ping_tool', () => 1);\n",
  });
  assert.match(run(['--project', sync]).stderr, /registration: cannot register tool `ping_tool`: the handler must be an async function/);
  const noApp = project('no-app', { app: 'export const x = 1;\n' });
  assert.match(run(['--project', noApp]).stderr, /^error: the entry module .*src\/app\.ts made no App: call App\.fromManifest/m);
  const nodeOnly = project('node-only', {
    app: "import { readFileSync } from 'node:fs';\nimport { App } from '@atrium/sdk';\nexport default App.fromManifest('atrium.app.yaml').tool('ping_tool', async () => readFileSync('x'));\n",
  });
  const bundled = run(['--project', nodeOnly]);
  assert.equal(bundled.code, 1);
  assert.match(bundled.stderr, /node:fs/);
  assert.match(bundled.stderr, /error: bundling with esbuild failed/);
});

test('a real build writes a component to build/app.wasm and prints its path', { skip: !toolchain && 'ATRIUM_NODE_MODULES is not set', timeout: 300_000 }, () => {
  const dir = project('real');
  cpSync(FIXTURE, join(dir, 'atrium.app.yaml'));
  const out = run(['--project', dir]);
  assert.equal(out.code, 0, out.stderr);
  const wasm = join(dir, 'build', 'app.wasm');
  assert.equal(out.stdout, `${wasm}\n`);
  const bytes = readFileSync(wasm);
  // A component: the wasm magic, then the component layer's version (0x0d 0x00 0x01 0x00).
  assert.deepEqual([...bytes.subarray(0, 8)], [0x00, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00]);
  assert.ok(bytes.length > 1_000_000);
});
