// `ctx` against the test backend: every member, and the host's sandbox rules on each call
// (same decisions and wording as host/manifest/src/sandbox).

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { AgentCallError, App, FailedError, HttpResponse, ToolCallError, isSecretKey } from '../src/index.js';
import { TestClient } from '../src/testing/index.js';
import { sandboxCheck } from '../src/validator.js';

const app = App.fromManifest('fixtures/atrium.app.yaml');
const client = (options) => new TestClient(app, options);

async function rejection(pending, type) {
  try {
    await pending;
  } catch (e) {
    assert.ok(e instanceof type, `expected a ${type.name}, got ${e?.stack ?? e}`);
    return e;
  }
  assert.fail('the call succeeded');
}

test('the call identity', () => {
  const ctx = client({ tenantId: 't-9', chainDepth: 3, visitedAgents: ['crm:bot'] }).ctx();
  assert.equal(ctx.tenantId, 't-9');
  assert.equal(ctx.appId, 'sdk-fixture');
  assert.equal(ctx.appVersion, '0.1.0');
  assert.equal(ctx.callId, 'call-test');
  assert.equal(ctx.chainDepth, 3);
  assert.deepEqual(ctx.visitedAgents, ['crm:bot']);
  assert.equal(ctx.isPublicRoute, false);
  assert.equal(client().withTenant('t-2').asPublicRoute().ctx().isPublicRoute, true);
});

test('tools.call answers the mock, or unmocked, or scope_denied with the needed scopes', async () => {
  const c = client().mockTool('records.query', [{ id: 1 }], { scopes: ['notes.read'] }).mockTool('free', { ok: true });
  const ctx = c.ctx();
  assert.deepEqual(await ctx.tools.call('free', { a: 1 }), { ok: true });
  assert.deepEqual(await ctx.tools.call('free'), { ok: true });
  const denied = await rejection(ctx.tools.call('records.query', {}), ToolCallError);
  assert.deepEqual(denied.toRecord(), {
    toolName: 'records.query',
    decision: 'scope_denied',
    message: 'tool `records.query` needs scopes notes.read: the tenant has not granted them',
    neededScopes: ['notes.read'],
  });
  assert.equal(
    denied.toString(),
    'tool call `records.query` failed (scope_denied): tool `records.query` needs scopes notes.read: the tenant has not granted them [needed scopes: notes.read]',
  );
  c.grant('notes.read');
  assert.deepEqual(await ctx.tools.call('records.query', {}), [{ id: 1 }]);
  const unmocked = await rejection(ctx.tools.call('mail.send', {}), ToolCallError);
  assert.equal(unmocked.decision, 'unmocked');
  assert.equal(unmocked.message, 'tool `mail.send` is not mocked');
  const notObject = await rejection(ctx.tools.call('free', [1, 2]), ToolCallError);
  assert.deepEqual([notObject.decision, notObject.message], ['invalid_arguments', 'the arguments must be a JSON object']);
  const cyclic = {};
  cyclic.self = cyclic;
  assert.equal((await rejection(ctx.tools.call('free', cyclic), ToolCallError)).decision, 'invalid_arguments');
  const undeclared = await rejection(
    client().mockTool('admin', {}, { scopes: ['admin.all'] }).ctx().tools.call('admin', {}),
    ToolCallError,
  );
  assert.equal(undeclared.message, 'tool `admin` needs scopes admin.all: add admin.all to required_scopes so the tenant can grant them');
  const failing = client().mockToolError('crm.lookup', { decision: 'network_error', message: 'down' });
  assert.deepEqual((await rejection(failing.ctx().tools.call('crm.lookup', {}), ToolCallError)).toRecord(), {
    toolName: 'crm.lookup',
    decision: 'network_error',
    message: 'down',
    neededScopes: [],
  });
  assert.deepEqual(c.toolCalls.map(([name]) => name), ['free', 'free', 'records.query', 'records.query', 'mail.send']);
});

test('secrets.get answers the value or null, and never throws', () => {
  const c = client().mockSecret('BANK_API_KEY', 'k-1');
  const ctx = c.ctx();
  assert.equal(ctx.secrets.get('BANK_API_KEY'), 'k-1');
  assert.equal(ctx.secrets.get('OTHER_KEY'), null);
  assert.equal(ctx.secrets.get('bank_api_key'), null, 'a malformed key reads as unset');
  assert.equal(ctx.secrets.get(`A${'B'.repeat(64)}`), null);
  assert.equal(ctx.secrets.get(undefined), null);
  // The host's warning, in the host's words (the validator module runs its check).
  assert.deepEqual(c.logs.at(-1), ['warn', 'secrets.get(`undefined`): a secret key must match ^[A-Z][A-Z0-9_]{0,63}$; returning none']);
  assert.deepEqual(c.logs.map(([level]) => level), ['warn', 'warn', 'warn']);
  c.secretsUnreachable();
  assert.equal(ctx.secrets.get('BANK_API_KEY'), null, 'a platform failure reads as unset');
  // isSecretKey, the helper for apps, agrees with the host's rule.
  const keys = ['A', `A${'1'.repeat(63)}`, `A${'1'.repeat(64)}`, '1A', '_A', 'a', 'A_B9', 'AB-C', '', 'É'];
  for (const key of keys) {
    const host = sandboxCheck({ manifest: app.manifestText, check: { kind: 'secret_key', key } });
    assert.equal(isSecretKey(key), 'ok' in host, key);
  }
});

test('config reads the install settings', () => {
  const ctx = client().setting('limit', 10).setting('name', 'Acme').setting('flags', { a: [1] }).ctx();
  assert.equal(ctx.config.get('limit'), 10);
  assert.equal(ctx.config.get('name'), 'Acme');
  assert.equal(ctx.config.get('unset'), null);
  assert.deepEqual(ctx.config.all(), { limit: 10, name: 'Acme', flags: { a: [1] } });
});

test('rooms.post posts as a declared agent and MockRooms records it', async () => {
  const c = client();
  const ctx = c.ctx();
  const ungranted = await rejection(ctx.rooms.post('room-1', 'hello', { fromAgent: 'writer' }), ToolCallError);
  assert.deepEqual(
    [ungranted.decision, ungranted.message, ungranted.neededScopes],
    ['scope_denied', 'tool `rooms.post` needs scopes rooms.write: add rooms.write to required_scopes so the tenant can grant them', ['rooms.write']],
  );
  c.grant('rooms.write');
  const posted = await ctx.rooms.post('room-1', 'hello @sdk-fixture:editor', { fromAgent: 'writer', metadata: { kind: 'note' } });
  assert.equal(posted.message.senderRef, 'sdk-fixture:writer');
  assert.equal(posted.message.senderDisplay, 'Writer');
  assert.equal(posted.message.senderType, 'agent');
  assert.deepEqual(posted.message.mentions, ['sdk-fixture:editor']);
  assert.deepEqual(posted.message.metadata, { kind: 'note' });
  assert.deepEqual(posted.routedTargets, []);
  await ctx.rooms.post('room-2', 'plain', { fromAgent: 'editor' });
  assert.deepEqual(c.rooms.posts, [
    { roomId: 'room-1', content: 'hello @sdk-fixture:editor', fromAgent: 'writer', metadata: { kind: 'note' } },
    { roomId: 'room-2', content: 'plain', fromAgent: 'editor', metadata: null },
  ]);
  const refused = async (args, decision, message) => {
    const e = await rejection(ctx.rooms.post(...args), ToolCallError);
    assert.deepEqual([e.toolName, e.decision, e.message], ['rooms.post', decision, message]);
  };
  await refused(['r', 'x', {}], 'invalid_arguments', 'from_agent is required: the agent of this app that posts');
  await refused(['r', 'x', { fromAgent: 'ghost' }], 'unknown_agent', '`ghost` is not an agent of this app (declared agents: writer, editor)');
  await refused(['r', '  ', { fromAgent: 'writer' }], 'invalid_arguments', 'content must not be empty');
  await refused(['r', 'é'.repeat(20_001), { fromAgent: 'writer' }], 'invalid_arguments', 'content has 20001 characters; a room message has at most 20000');
  await refused(['r', 'x', { fromAgent: 'writer', metadata: [1] }], 'invalid_arguments', 'metadata must be a JSON object');
  assert.equal(c.rooms.posts.length, 2);
});

test('team.delegate follows the team and the chain', async () => {
  const ctx = client().ctx();
  assert.equal(await ctx.team.delegate('editor', 'check this', { fromAgent: 'writer' }), '[sdk-fixture:editor] check this');
  assert.equal(await ctx.team.delegate('writer', 'self', { fromAgent: 'writer' }), '[sdk-fixture:writer] self');
  const reason = async (pending) => (await rejection(pending, AgentCallError)).reason;
  assert.equal(await reason(ctx.team.delegate('writer', 'p', { fromAgent: 'editor' })), 'team delegation denied: agent `editor` has no team');
  assert.equal(await reason(ctx.team.delegate('ghost', 'p', { fromAgent: 'writer' })), 'team delegation denied: `ghost` is not in the team of `writer` (editor)');
  assert.equal(await reason(ctx.team.delegate('editor', 'p', {})), 'from_agent is required');
  assert.equal(
    await reason(client().asPublicRoute().ctx().team.delegate('editor', 'p', { fromAgent: 'writer' })),
    'team delegation is not available on a public route: there is no caller agent identity and no tenant principal',
  );
  assert.equal(
    await reason(client({ chainDepth: 8 }).ctx().team.delegate('editor', 'p', { fromAgent: 'writer' })),
    'chain depth exceeded: this call would be hop 9, the limit is 8',
  );
  assert.equal(
    await reason(client({ visitedAgents: ['sdk-fixture:editor'] }).ctx().team.delegate('editor', 'p', { fromAgent: 'writer' })),
    'cycle detected: agent `sdk-fixture:editor` is already on this call chain (sdk-fixture:editor)',
  );
});

test('apps.invoke and apps.fetch', async () => {
  const c = client().answerApp('crm', 'bot', (prompt) => `crm says ${prompt}`).answerFetch('crm', '/contacts', { status: 201, body: { id: 7 } });
  const ctx = c.ctx();
  assert.equal(await ctx.apps.invoke('crm', 'bot', 'hi'), 'crm says hi');
  assert.equal(await ctx.apps.invoke('ledger', 'clerk', 'hi'), '[ledger:clerk] hi');
  const fetched = await ctx.apps.fetch('crm', '/contacts', { method: 'post', body: { name: 'Ada' } });
  assert.ok(fetched instanceof HttpResponse);
  assert.deepEqual([fetched.status, fetched.json()], [201, { id: 7 }]);
  assert.equal((await ctx.apps.fetch('ledger', '/accounts/1', 'GET')).text(), '{}');
  assert.deepEqual(c.agentCalls, ['invoke crm:bot', 'invoke ledger:clerk', 'fetch crm POST /contacts', 'fetch ledger GET /accounts/1']);
  const reason = async (pending) => (await rejection(pending, AgentCallError)).reason;
  assert.equal(await reason(ctx.apps.fetch('crm', 'contacts')), 'apps.fetch: the path `contacts` must start with /');
  assert.equal(await reason(ctx.apps.fetch('crm', '/x', 'TRACE')), 'apps.fetch: `TRACE` is not one of GET, POST, PUT, DELETE, PATCH');
  assert.equal(await reason(ctx.apps.invoke('', 'bot', 'x')), 'apps.invoke needs an app and an agent');
  c.answerApp('crm', 'down', new AgentCallError({ reason: 'no grant' }));
  assert.equal(await reason(ctx.apps.invoke('crm', 'down', 'x')), 'no grant');
});

test('events.emit records declared events and refuses others', async () => {
  const c = client().wire('note_saved', 2);
  const ctx = c.ctx();
  assert.deepEqual(await ctx.events.emit('note_saved', { id: 'n-1' }), { wireCount: 2, dispatched: 2, failures: 0 });
  assert.deepEqual(c.emitted, [['note_saved', { id: 'n-1' }]]);
  const e = await rejection(ctx.events.emit('note_deleted', {}), AgentCallError);
  assert.equal(e.reason, "event `note_deleted` is not declared in the manifest's emits (note_saved)");
  assert.equal(e.toString(), "agent call failed: event `note_deleted` is not declared in the manifest's emits (note_saved)");
  assert.match((await rejection(client().asPublicRoute().ctx().events.emit('note_saved', {}), AgentCallError)).reason, /^events\.emit is not available on a public route/);
});

test('agent.ask asks the default agent or a named one', async () => {
  const c = client().answerAgent('editor', 'edited');
  const ctx = c.ctx();
  assert.equal(await ctx.agent.ask('hello'), '[sdk-fixture:writer] hello');
  assert.equal(await ctx.agent.ask('hello', { agent: 'editor' }), 'edited');
  assert.equal(
    (await rejection(ctx.agent.ask('x', { agent: 'ghost' }), AgentCallError)).reason,
    'agent `ghost` is not an agent of this app (declared agents: writer, editor)',
  );
  const bare = new TestClient(App.fromManifest('fixtures/no-agents.yaml')).ctx();
  assert.equal((await rejection(bare.agent.ask('x'), AgentCallError)).reason, 'agent.ask: this app declares no agent');
  assert.deepEqual(c.agentCalls, ['ask writer', 'ask editor']);
});

test('commitments.add checks the agent, the title and the due time', async () => {
  const c = client();
  const ctx = c.ctx();
  assert.equal(await ctx.commitments.add('Call back', 'About the invoice', 'writer', '2026-05-01T09:00:00Z'), 'commitment-1');
  assert.equal(await ctx.commitments.add('Later', '', 'editor', new Date('2026-06-01T00:00:00Z')), 'commitment-2');
  assert.equal(await ctx.commitments.add('Someday', '', 'editor'), 'commitment-3');
  assert.deepEqual(c.commitments, [
    ['Call back', 'About the invoice', 'writer', '2026-05-01T09:00:00Z'],
    ['Later', '', 'editor', '2026-06-01T00:00:00.000Z'],
    ['Someday', '', 'editor', null],
  ]);
  const refused = async (args, message) => {
    const e = await rejection(ctx.commitments.add(...args), ToolCallError);
    assert.deepEqual([e.toolName, e.message], ['commitments.add', message]);
  };
  await refused(['t', '', 'writer', 'tomorrow'], 'due_at `tomorrow` is not an ISO-8601 time with an offset (for example 2026-05-01T09:00:00Z)');
  await refused(['t', '', 'writer', '2026-05-01T09:00:00'], 'due_at `2026-05-01T09:00:00` is not an ISO-8601 time with an offset (for example 2026-05-01T09:00:00Z)');
  await refused([' ', '', 'writer'], 'title must not be empty');
  await refused(['t', '', ''], 'from_agent is required');
  await refused(['t', '', 'ghost'], '`ghost` is not an agent of this app (declared agents: writer, editor)');
  await refused(['t'.repeat(201), '', 'writer'], 'title has 201 characters; a commitment title has at most 200');
  await refused(['t', 'é'.repeat(10001), 'writer'], 'content has 10001 characters; a commitment has at most 10000');
  assert.equal(await ctx.commitments.add('t'.repeat(200), 'é'.repeat(10000), 'writer'), 'commitment-4');
});

test('publicCallbackUrl names a public route, or fails', () => {
  const ctx = client().ctx();
  assert.equal(ctx.publicCallbackUrl('/files/note-7.txt'), 'http://127.0.0.1:8787/api/apps/sdk-fixture/public/t/tenant-test/files/note-7.txt');
  assert.throws(() => ctx.publicCallbackUrl('/notes/7'), (e) => {
    assert.ok(e instanceof FailedError);
    assert.equal(e.message, '`/notes/7` matches no public route of this app (public routes: /files/note-{id}.txt)');
    return true;
  });
});

test('logger and outbound HTTP', async () => {
  const c = client().mockHttp('https://api.example.com/v1?x=1', { status: 200, headers: { 'content-type': 'text/plain' }, body: 'fine' });
  const ctx = c.ctx();
  for (const level of ['trace', 'debug', 'info', 'warn', 'error']) ctx.logger[level](`${level} line`);
  assert.deepEqual(c.logs.map(([level]) => level), ['trace', 'debug', 'info', 'warn', 'error']);
  const answer = await ctx.http.get('https://api.example.com/v1?x=1', { headers: { authorization: 'Bearer t' } });
  assert.deepEqual([answer.status, answer.text(), answer.header('Content-Type')], [200, 'fine', 'text/plain']);
  assert.deepEqual(c.httpRequests[0].headers, [['authorization', 'Bearer t']]);
  const refused = await rejection(ctx.http.get('https://evil.example/'), FailedError);
  assert.equal(refused.message, 'request refused: HttpRequestDenied (`evil.example` is not in network.egress_hosts)');
  assert.match((await rejection(ctx.http.get('https://bank.example/'), FailedError)).message, /is not in network\.egress_hosts/);
  assert.match((await rejection(ctx.http.get('not a url'), FailedError)).message, /^`not a url` is not a valid URL$/);
  assert.match((await rejection(ctx.http.send({ url: 'https://api.example.com/', body: 42 }), FailedError)).message, /^the request is not valid: a body is a string/);
  // `get` needs no `this`.
  const { get } = ctx.http;
  assert.equal((await get('https://api.example.com/v1?x=1')).text(), 'fine');
});

test('outbound hosts are matched by the host\'s EgressPolicy, through the validator module', async () => {
  // The host's rules: exact names and `*.` subdomains, case-insensitive, a trailing dot and the
  // port ignored; user info is not the host; the wildcard's own domain is not a subdomain.
  const ctx = client().ctx();
  const allowed = ['https://API.Example.com./v1', 'https://api.example.com:8443/', 'https://user:pw@api.example.com/', 'https://a.b.bank.example/', 'http://x.bank.example'];
  for (const url of allowed) {
    assert.match((await rejection(ctx.http.get(url), FailedError)).message, /^no mock response for /, url);
  }
  const refused = {
    'https://bank.example/': 'bank.example',
    'https://notbank.example/': 'notbank.example',
    'https://api.example.com.evil.example/': 'api.example.com.evil.example',
    'https://api.example.com@evil.example/': 'evil.example',
    'http://[::1]:8080/': '[::1]',
    'http://127.0.0.1/': '127.0.0.1',
  };
  for (const [url, host] of Object.entries(refused)) {
    assert.equal((await rejection(ctx.http.get(url), FailedError)).message, `request refused: HttpRequestDenied (\`${host}\` is not in network.egress_hosts)`, url);
  }
  // The module answers the check itself (a module older than the SDK does not know it).
  const manifest = app.manifestText;
  assert.deepEqual(sandboxCheck({ manifest, check: { kind: 'egress', host: 'a.bank.example' } }), { ok: true });
  assert.deepEqual(sandboxCheck({ manifest, check: { kind: 'egress', host: 'bank.example' } }), { ok: false });
});

test('values that are not JSON are refused before they reach the platform', async () => {
  const c = client().mockTool('free', {}).answerFetch('crm', '/x', { status: 200 });
  const ctx = c.ctx();
  const cyclic = {};
  cyclic.self = cyclic;
  const args = await rejection(ctx.tools.call('free', cyclic), ToolCallError);
  assert.deepEqual([args.decision, args.message.split(':')[0]], ['invalid_arguments', 'the arguments do not serialize']);
  const fn = await rejection(ctx.tools.call('free', () => 1), ToolCallError);
  assert.equal(fn.message, 'the arguments do not serialize: function is not JSON');
  const meta = await rejection(ctx.rooms.post('r', 'x', { fromAgent: 'writer', metadata: { n: 1n } }), ToolCallError);
  assert.deepEqual([meta.toolName, meta.decision, meta.message], ['rooms.post', 'invalid_arguments', 'metadata does not serialize: Do not know how to serialize a BigInt']);
  const payload = await rejection(ctx.events.emit('note_saved', Symbol('x')), AgentCallError);
  assert.equal(payload.reason, 'the payload does not serialize: symbol is not JSON');
  const body = await rejection(ctx.apps.fetch('crm', '/x', { method: 'POST', body: cyclic }), AgentCallError);
  assert.match(body.reason, /^the body does not serialize: /);
  assert.deepEqual([c.toolCalls, c.emitted, c.rooms.posts, c.agentCalls], [[], [], [], []]);
});
