// Manifests load through the validator module (the validator of `atrium lint`), strictly:
// every failure is a ManifestError carrying the findings.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';

import { App, ManifestError, loadManifest, loadManifestFromString } from '../src/index.js';

const FIXTURE = readFileSync(new URL('fixtures/atrium.app.yaml', import.meta.url), 'utf8');

function manifestError(run) {
  try {
    run();
  } catch (e) {
    assert.ok(e instanceof ManifestError, `not a ManifestError: ${e?.stack ?? e}`);
    return e;
  }
  assert.fail('the manifest was accepted');
}

test('a valid manifest loads as the normalised manifest', () => {
  const m = loadManifest('fixtures/atrium.app.yaml');
  assert.equal(m.app_id, 'sdk-fixture');
  assert.deepEqual(m.required_scopes, ['notes.read', 'notes.write']);
  assert.equal(m.runtime.port, 8080, 'defaults are filled in');
  assert.equal(m.runtime.resources.memory_mb, 256);
  assert.deepEqual(m.lifecycle.schedules.map((s) => s.name), ['hourly', 'daily_digest']);
  assert.equal(m.http_routes[1].method, 'POST', 'methods are upper-cased');
  assert.deepEqual(m.subscribes_to[0].target, { agent: 'writer' });
  assert.deepEqual(loadManifestFromString(FIXTURE), m);
  assert.equal(loadManifest('fixtures/app.json').app_id, 'json-app');
  const app = App.fromManifest('fixtures/atrium.app.yaml');
  assert.equal(app.manifestText, FIXTURE, 'the text is kept as written');
  assert.deepEqual(app.manifest, m);
  assert.equal(App.fromManifestString(FIXTURE).manifest.app_id, 'sdk-fixture');
});

test('a broken manifest is a ManifestError with the findings of atrium lint', () => {
  const e = manifestError(() => loadManifestFromString(FIXTURE.replace('app_id: sdk-fixture', 'app_id: Not_A_Slug')));
  assert.ok(e.message.startsWith('invalid manifest: app_id: '), e.message);
  const finding = e.findings.find((f) => f.path === 'app_id');
  assert.deepEqual(Object.keys(finding).sort(), ['code', 'column', 'file', 'line', 'message', 'path', 'severity']);
  assert.equal(finding.code, 'pattern');
  assert.equal(finding.severity, 'error');
  assert.equal(finding.file, 'atrium.app.yaml');
  assert.equal(finding.line, 4);
  assert.match(e.problems[0], /^app_id: .* \[pattern\] \(line 4, column \d+\)$/);

  const unknown = manifestError(() => loadManifestFromString(FIXTURE.replace('version: 0.1.0', 'colour: blue\nversion: 0.1.0')));
  assert.ok(unknown.findings.some((f) => f.path === 'colour' && f.code === 'unknown_field'), JSON.stringify(unknown.findings));

  const syntax = manifestError(() => loadManifestFromString(`${FIXTURE}  bad: [indent\n`));
  assert.ok(syntax.findings.length > 0);

  const empty = manifestError(() => loadManifestFromString(''));
  assert.ok(empty.problems[0].includes('the manifest is empty'), empty.problems[0]);

  const json = manifestError(() => loadManifestFromString('{"apiVersion": "platform/v2"}', 'atrium.app.json'));
  assert.ok(json.findings.every((f) => f.file === 'atrium.app.json'));

  assert.throws(() => App.fromManifestString('apiVersion: platform/v1\n'), ManifestError);
  assert.throws(() => loadManifestFromString(42), ManifestError);
});

test('a missing file is a ManifestError saying so', () => {
  const e = manifestError(() => loadManifest('fixtures/nowhere.yaml'));
  assert.match(e.message, /^cannot read fixtures\/nowhere\.yaml: no such file/);
  assert.deepEqual(e.findings, []);
  assert.deepEqual(e.problems, [e.message]);
  assert.throws(() => App.fromManifest('fixtures/nowhere.yaml'), ManifestError);
});

test('a relative path is found from the calling module when the working directory lacks it', () => {
  const cwd = process.cwd();
  process.chdir('/');
  try {
    assert.equal(loadManifest('fixtures/atrium.app.yaml').app_id, 'sdk-fixture');
    assert.equal(loadManifest(new URL('fixtures/app.json', import.meta.url)).app_id, 'json-app');
    assert.equal(loadManifest({ href: new URL('fixtures/app.json', import.meta.url).href }).app_id, 'json-app', 'any {href}, as the types say');
  } finally {
    process.chdir(cwd);
  }
});

test('without the validator module the error names ATRIUM_MANIFEST_VALIDATOR', () => {
  const saved = process.env.ATRIUM_MANIFEST_VALIDATOR;
  try {
    delete process.env.ATRIUM_MANIFEST_VALIDATOR;
    const e = manifestError(() => loadManifestFromString(FIXTURE));
    assert.match(e.message, /^the manifest validator module is not available: set ATRIUM_MANIFEST_VALIDATOR to the path of atrium_manifest_wasm\.wasm/);
    assert.match(e.message, /validator\.wasm \(neither exists\)$/);
    process.env.ATRIUM_MANIFEST_VALIDATOR = '/nonexistent/validator.wasm';
    assert.equal(
      manifestError(() => loadManifestFromString(FIXTURE)).message,
      'ATRIUM_MANIFEST_VALIDATOR names /nonexistent/validator.wasm, which is not a file',
    );
    process.env.ATRIUM_MANIFEST_VALIDATOR = new URL('fixtures/app.json', import.meta.url).pathname;
    assert.match(manifestError(() => loadManifestFromString(FIXTURE)).message, /cannot be loaded/);
  } finally {
    if (saved === undefined) delete process.env.ATRIUM_MANIFEST_VALIDATOR;
    else process.env.ATRIUM_MANIFEST_VALIDATOR = saved;
  }
});
