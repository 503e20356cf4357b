// Every registration rule, with the Rust SDK's exact wording (guest-sdk/src/app.rs), and the
// TypeScript rule that a handler is an async function.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { App, RegistrationError, RegistrationErrorKind as Kind } from '../src/index.js';

const ok = async () => ({});
const fixture = () => App.fromManifest('fixtures/atrium.app.yaml');

/** The registration error `register` throws: [kind, message]. */
function refusal(register) {
  try {
    register();
  } catch (e) {
    assert.ok(e instanceof RegistrationError, `not a RegistrationError: ${e}`);
    assert.equal(e.name, 'RegistrationError');
    return [e.kind, e.message];
  }
  assert.fail('the registration was accepted');
}

test('a tool must be declared in tools', () => {
  assert.deepEqual(refusal(() => fixture().tool('write_note', ok)), [
    Kind.UnknownTool,
    "cannot register tool `write_note`: it is not in the manifest's tools (declared: read_note, ping_tool, use_ctx)",
  ]);
  assert.deepEqual(refusal(() => App.fromManifest('fixtures/no-agents.yaml').tool('ping_tool', ok)), [
    Kind.UnknownTool,
    "cannot register tool `ping_tool`: it is not in the manifest's tools (none are declared)",
  ]);
});

test('scopesRequired must be a subset of required_scopes', () => {
  assert.deepEqual(refusal(() => fixture().tool('read_note', { scopesRequired: ['notes.read', 'notes.admin', 'x.y'] }, ok)), [
    Kind.ScopeNotRequired,
    "cannot register tool `read_note`: scopes_required notes.admin, x.y must be a subset of the manifest's required_scopes (declared: notes.read, notes.write)",
  ]);
  const app = fixture().tool('read_note', { description: 'Reads.', scopesRequired: ['notes.read', 'notes.write'] }, ok);
  assert.deepEqual(app.registration().tools, ['read_note']);
});

test('nothing is registered twice', () => {
  const app = fixture()
    .tool('read_note', ok)
    .onInstall(ok)
    .onSchedule('hourly', ok)
    .onEvent('contact_changed', ok)
    .route('get', '/notes/{id}', ok)
    .onMessage(ok);
  assert.deepEqual(refusal(() => app.tool('read_note', ok)), [
    Kind.DoubleRegistration,
    'cannot register tool `read_note` twice: a handler is already registered',
  ]);
  assert.deepEqual(refusal(() => app.onInstall(ok)), [
    Kind.DoubleRegistration,
    'cannot register lifecycle hook `on_install` twice: a handler is already registered',
  ]);
  assert.deepEqual(refusal(() => app.onSchedule('hourly', ok)), [
    Kind.DoubleRegistration,
    'cannot register schedule `hourly` twice: a handler is already registered',
  ]);
  assert.deepEqual(refusal(() => app.onEvent('contact_changed', ok)), [
    Kind.DoubleRegistration,
    'cannot register event `contact_changed` twice: a handler is already registered',
  ]);
  assert.deepEqual(refusal(() => app.route('GET', '/notes/{id}', ok)), [
    Kind.DoubleRegistration,
    'cannot register route `GET /notes/{id}` twice: a handler is already registered',
  ]);
  assert.deepEqual(refusal(() => app.onMessage(ok)), [
    Kind.DoubleRegistration,
    'cannot register room handler `on_message` twice: a handler is already registered',
  ]);
});

test('a lifecycle handler needs its flag', () => {
  assert.deepEqual(refusal(() => fixture().onUninstall(ok)), [
    Kind.LifecycleDisabled,
    'cannot register on_uninstall: lifecycle.on_uninstall is not true in the manifest',
  ]);
  const bare = App.fromManifest('fixtures/no-agents.yaml');
  for (const [method, hook] of [
    ['onInstall', 'on_install'],
    ['onUninstall', 'on_uninstall'],
    ['onInbound', 'on_inbound'],
    ['onUserAdded', 'on_user_added'],
  ]) {
    assert.deepEqual(refusal(() => bare[method](ok)), [
      Kind.LifecycleDisabled,
      `cannot register ${hook}: lifecycle.${hook} is not true in the manifest`,
    ]);
  }
  const app = fixture().onInstall(ok).onInbound(ok).onUserAdded(ok);
  assert.deepEqual(app.registration().lifecycle, ['on_install', 'on_inbound', 'on_user_added']);
});

test('a schedule must be in lifecycle.schedules', () => {
  assert.deepEqual(refusal(() => fixture().onSchedule('weekly', ok)), [
    Kind.UnknownSchedule,
    'cannot register schedule `weekly`: it is not in lifecycle.schedules (declared: hourly, daily_digest)',
  ]);
  assert.deepEqual(refusal(() => App.fromManifest('fixtures/no-agents.yaml').onSchedule('hourly', ok)), [
    Kind.UnknownSchedule,
    'cannot register schedule `hourly`: it is not in lifecycle.schedules (none are declared)',
  ]);
});

test('an event handler needs a subscription', () => {
  assert.deepEqual(refusal(() => fixture().onEvent('contact_deleted', ok)), [
    Kind.UnknownEvent,
    "cannot register event handler `contact_deleted`: the manifest's subscribes_to has no such event (declared: contact_changed, contact_changed)",
  ]);
});

test('a route must be declared with the same method and path', () => {
  assert.deepEqual(refusal(() => fixture().route('DELETE', '/notes/{id}', ok)), [
    Kind.UnknownRoute,
    "cannot register route `DELETE /notes/{id}`: it is not in the manifest's http_routes (declared: GET /notes/{id}, POST /hook, GET /files/note-{id}.txt)",
  ]);
  assert.deepEqual(refusal(() => fixture().route('get', '/notes/{note}', ok))[0], Kind.UnknownRoute);
  const app = fixture().route('post', '/hook', ok).route('GET', '/notes/{id}', ok);
  assert.deepEqual(app.registration().routes, ['POST /hook', 'GET /notes/{id}']);
});

test('a room handler needs an agent', () => {
  assert.deepEqual(refusal(() => App.fromManifest('fixtures/no-agents.yaml').onMessage(ok)), [
    Kind.NoAgent,
    'cannot register on_message: the manifest declares no agent to be mentioned',
  ]);
});

test('handlers must be async functions (they return a promise)', () => {
  const sync = () => ({});
  const cases = [
    [(app) => app.tool('ping_tool', sync), 'tool `ping_tool`'],
    [(app) => app.tool('ping_tool', {}, function plain() {}), 'tool `ping_tool`'],
    [(app) => app.onInstall(sync), 'on_install'],
    [(app) => app.onInbound(sync), 'on_inbound'],
    [(app) => app.onUserAdded(sync), 'on_user_added'],
    [(app) => app.onSchedule('hourly', sync), 'schedule `hourly`'],
    [(app) => app.onEvent('contact_changed', sync), 'event handler `contact_changed`'],
    [(app) => app.onMessage(sync), 'on_message'],
    [(app) => app.route('GET', '/notes/{id}', sync), 'route `GET /notes/{id}`'],
  ];
  for (const [register, subject] of cases) {
    assert.deepEqual(refusal(() => register(fixture())), [
      Kind.NotAsync,
      `cannot register ${subject}: the handler must be an async function (a TypeScript handler returns a promise; got a function that is not async)`,
    ]);
  }
  assert.deepEqual(refusal(() => fixture().tool('ping_tool', undefined)), [
    Kind.NotAsync,
    'cannot register tool `ping_tool`: the handler must be an async function (a TypeScript handler returns a promise; got undefined)',
  ]);
  // A bound async function is still async; the manifest rules come first.
  fixture().tool('ping_tool', ok.bind(null));
  assert.equal(refusal(() => fixture().tool('nope', sync))[0], Kind.UnknownTool);
});

test('the registration lists what is registered, sorted, hooks in manifest order', () => {
  const app = fixture()
    .tool('ping_tool', ok)
    .tool('read_note', ok)
    .onUserAdded(ok)
    .onInstall(ok)
    .onSchedule('hourly', ok)
    .onSchedule('daily_digest', ok)
    .onEvent('contact_changed', ok)
    .route('GET', '/files/note-{id}.txt', ok)
    .route('POST', '/hook', ok);
  const registration = app.registration();
  assert.ok(registration.manifest.startsWith('# The TypeScript SDK'));
  assert.deepEqual(
    { ...registration, manifest: undefined },
    {
      manifest: undefined,
      tools: ['ping_tool', 'read_note'],
      lifecycle: ['on_install', 'on_user_added'],
      schedules: ['daily_digest', 'hourly'],
      events: ['contact_changed'],
      roomMessages: false,
      routes: ['GET /files/note-{id}.txt', 'POST /hook'],
    },
  );
});

test('tool options: {description, scopesRequired}, in that shape', () => {
  const app = fixture().tool('read_note', { description: 'Reads a note.' }, ok).tool('ping_tool', null, ok);
  assert.deepEqual(app.registration().tools, ['ping_tool', 'read_note']);
  assert.throws(() => fixture().tool('read_note', 'Reads a note.', ok), {
    name: 'TypeError',
    message: 'cannot register tool `read_note`: the options are {description, scopesRequired} (got string)',
  });
  assert.throws(() => fixture().tool('read_note', { scopesRequired: 'notes.read' }, ok), {
    name: 'TypeError',
    message: 'cannot register tool `read_note`: scopesRequired must be a list of scope names',
  });
});

test('registrations chain and every kind is a Rust kind or NotAsync', () => {
  assert.deepEqual(Object.keys(Kind).sort(), [
    'DoubleRegistration',
    'LifecycleDisabled',
    'NoAgent',
    'NotAsync',
    'ScopeNotRequired',
    'UnknownEvent',
    'UnknownRoute',
    'UnknownSchedule',
    'UnknownTool',
  ]);
  const app = fixture();
  assert.equal(app.tool('ping_tool', ok), app);
});
