// The test helpers: TestClient over an app (tools, hooks, schedules, room messages, routes,
// simulateEvent), MockRooms, the mock file, and how a handler's failure maps to the WIT
// handler-error (the same mapping the component uses).

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { AgentCallError, App, FailedError, HttpResponse, InvalidInputError, ToolCallError } from '../src/index.js';
import { HandlerError, TestClient, inboundEnvelope, parseMockFile, roomMessage } from '../src/testing/index.js';

const seen = [];
const app = App.fromManifest('fixtures/atrium.app.yaml')
  .tool('read_note', { scopesRequired: ['notes.read'] }, async (ctx, args) => {
    if (typeof args.id !== 'string') throw new InvalidInputError('`id` is required');
    const [note] = await ctx.tools.call('notes.get', { id: args.id });
    return note ?? null;
  })
  .tool('ping_tool', async (ctx, args) => {
    switch (args.fail) {
      case 'failed':
        throw new FailedError('it broke');
      case 'type':
        throw new TypeError('bad type');
      case 'string':
        throw 'a string';
      case 'agent':
        throw new AgentCallError({ reason: 'cycle detected' });
      case 'tool':
        return ctx.tools.call('unmocked.tool', {});
      case 'undefined':
        return undefined;
      case 'bigint':
        return { n: 1n };
      default:
        return { pong: true, tenant: ctx.tenantId };
    }
  })
  .onInstall(async (ctx) => ctx.logger.info('installed'))
  .onInbound(async (ctx, envelope) => seen.push(['inbound', envelope]))
  .onUserAdded(async (ctx, user) => seen.push(['user', user]))
  .onSchedule('hourly', async (ctx) => {
    await ctx.events.emit('note_saved', { at: 'hourly' });
  })
  .onEvent('contact_changed', async (ctx, event) => ({ from: event.emitterAppId, target: event.targetAgentSlug, payload: event.payload }))
  .onMessage(async (ctx, agentSlug, message) => {
    await ctx.rooms.post(message.roomId, `${agentSlug} read: ${message.content}`, { fromAgent: agentSlug, metadata: message.metadata });
  })
  .route('GET', '/notes/{id}', async (ctx, request) => {
    if (request.param('id') === 'boom') throw new Error('exploded');
    if (request.param('id') === 'bad') throw new InvalidInputError('bad id');
    if (request.param('id') === 'plain') return { status: 202, headers: { 'x-a': '1' }, body: 'plain' };
    return HttpResponse.json({ id: request.param('id'), q: request.queryParam('q'), h: request.header('X-Test') });
  })
  .route('POST', '/hook', async (ctx, request) => HttpResponse.json(request.json(), 201).withHeader('x-seen', 'yes'));

async function handlerError(pending) {
  try {
    await pending;
  } catch (e) {
    assert.ok(e instanceof HandlerError, `not a HandlerError: ${e?.stack ?? e}`);
    return e;
  }
  assert.fail('the call succeeded');
}

test('callTool answers the result or a HandlerError by the WIT cases', async () => {
  const c = new TestClient(app).grant('notes.read').mockTool('notes.get', [{ id: 'n-1', text: 'hi' }], { scopes: ['notes.read'] });
  assert.deepEqual(await c.callTool('read_note', { id: 'n-1' }), { id: 'n-1', text: 'hi' });
  assert.deepEqual(await c.callTool('ping_tool'), { pong: true, tenant: 'tenant-test' });
  assert.equal(await c.callTool('ping_tool', { fail: 'undefined' }), null);
  const cases = [
    [{ fail: 'failed' }, 'failed', 'it broke'],
    [{ fail: 'type' }, 'failed', 'bad type'],
    [{ fail: 'string' }, 'failed', 'a string'],
    [{ fail: 'bigint' }, 'failed', "the result does not serialize: Do not know how to serialize a BigInt"],
  ];
  for (const [args, tag, val] of cases) {
    const e = await handlerError(c.callTool('ping_tool', args));
    assert.deepEqual([e.tag, e.val], [tag, val]);
  }
  const agent = await handlerError(c.callTool('ping_tool', { fail: 'agent' }));
  assert.equal(agent.tag, 'agent');
  assert.ok(agent.val instanceof AgentCallError);
  assert.equal(agent.val.reason, 'cycle detected');
  const tool = await handlerError(c.callTool('ping_tool', { fail: 'tool' }));
  assert.equal(tool.tag, 'tool');
  assert.ok(tool.val instanceof ToolCallError);
  assert.deepEqual([tool.val.toolName, tool.val.decision], ['unmocked.tool', 'unmocked']);
  const invalid = await handlerError(c.callTool('read_note', {}));
  assert.deepEqual([invalid.tag, invalid.val, invalid.message], ['invalid-input', '`id` is required', 'invalid-input: `id` is required']);
  const missing = await handlerError(c.callTool('use_ctx', {}));
  assert.deepEqual([missing.tag, missing.val], ['no-handler', 'tool `use_ctx`']);
  const notObject = await handlerError(c.callTool('ping_tool', [1]));
  assert.deepEqual([notObject.tag, notObject.val], ['invalid-input', 'the arguments do not match: expected a JSON object']);
  const denied = await handlerError(new TestClient(app).mockTool('notes.get', [], { scopes: ['notes.read'] }).callTool('read_note', { id: 'x' }));
  assert.deepEqual([denied.tag, denied.val.decision, denied.val.neededScopes], ['tool', 'scope_denied', ['notes.read']]);
});

test('lifecycle hooks, schedules and room messages', async () => {
  const c = new TestClient(app);
  await c.install();
  assert.deepEqual(c.logs, [['info', 'installed']]);
  const uninstall = await handlerError(c.uninstall());
  assert.deepEqual([uninstall.tag, uninstall.val], ['no-handler', 'on_uninstall']);
  seen.length = 0;
  await c.inbound(inboundEnvelope({ subject: 'Hi', metadata: { thread: 't-1' } }));
  await c.userAdded({ userId: 'u-1', displayName: 'Ada' });
  assert.deepEqual(seen, [
    ['inbound', { messageId: 'msg-1', channel: 'email', from: 'someone@example.com', body: '', subject: 'Hi', receivedAt: '2026-01-01T00:00:00Z', attachmentIds: [], metadata: { thread: 't-1' } }],
    ['user', { userId: 'u-1', displayName: 'Ada', email: null }],
  ]);
  await c.schedule('hourly');
  assert.deepEqual(c.emitted, [['note_saved', { at: 'hourly' }]]);
  const unhandled = await handlerError(c.schedule('daily_digest'));
  assert.deepEqual([unhandled.tag, unhandled.val], ['no-handler', 'schedule `daily_digest`']);
  // As on the host, posting needs `rooms.write` granted to the install.
  const ungranted = await handlerError(c.roomMessage('editor', roomMessage('room-1', '@sdk-fixture:editor look')));
  assert.deepEqual([ungranted.tag, ungranted.val.decision, ungranted.val.neededScopes], ['tool', 'scope_denied', ['rooms.write']]);
  assert.deepEqual(c.rooms.posts, []);
  c.grant('rooms.write');
  await c.roomMessage('editor', roomMessage('room-1', '@sdk-fixture:editor look', { metadata: { a: 1 } }));
  assert.deepEqual(c.rooms.posts, [{ roomId: 'room-1', content: 'editor read: @sdk-fixture:editor look', fromAgent: 'editor', metadata: { a: 1 } }]);
  const refused = await handlerError(c.roomMessage('ghost', roomMessage('room-1', 'hi')));
  assert.equal(refused.tag, 'tool');
  assert.equal(refused.val.decision, 'unknown_agent');
});

test('simulateEvent routes to the handler and tells emitters apart', async () => {
  const c = new TestClient(app);
  assert.deepEqual(await c.simulateEvent('contact_changed', { id: 7 }), { from: 'crm', target: 'writer', payload: { id: 7 } });
  // Each emitter's subscription names its own target agent (crm-two's is editor).
  assert.deepEqual(await c.simulateEvent('contact_changed', { id: 8 }, { emitterAppId: 'crm-two' }), { from: 'crm-two', target: 'editor', payload: { id: 8 } });
  assert.deepEqual(await c.simulateEvent('contact_changed', null, { emitterAppId: 'stranger' }), { from: 'stranger', target: null, payload: null });
  const none = await handlerError(c.simulateEvent('contact_deleted', {}));
  assert.deepEqual([none.tag, none.val], ['no-handler', 'event `contact_deleted`']);
  const cyclic = {};
  cyclic.self = cyclic;
  const unserializable = await handlerError(c.simulateEvent('contact_changed', cyclic));
  assert.equal(unserializable.tag, 'invalid-input');
  assert.match(unserializable.val, /^the event payload does not serialize: /);
  const badArgs = await handlerError(c.callTool('ping_tool', { n: 1n }));
  assert.deepEqual([badArgs.tag, badArgs.val], ['invalid-input', 'the arguments do not serialize: Do not know how to serialize a BigInt']);
});

test('routes: placeholders, query, headers, 400, 404, 405, 500', async () => {
  const c = new TestClient(app);
  const found = await c.request('GET', '/notes/n-1/?q=a%20b', { headers: { 'X-Test': 'yes' } });
  assert.deepEqual([found.status, found.header('content-type'), found.json()], [200, 'application/json', { id: 'n-1', q: 'a%20b', h: 'yes' }]);
  const posted = await c.request('post', '/hook', { body: { a: 1 } });
  assert.deepEqual([posted.status, posted.json(), posted.header('x-seen')], [201, { a: 1 }, 'yes']);
  const bad = await c.request('POST', '/hook', { body: 'not json' });
  assert.equal(bad.status, 400);
  assert.match(bad.text(), /^the body is not the expected JSON: /);
  assert.equal(bad.header('content-type'), 'text/plain; charset=utf-8');
  assert.deepEqual([(await c.request('GET', '/notes/bad')).status, (await c.request('GET', '/notes/bad')).text()], [400, 'bad id']);
  const boom = await c.request('GET', '/notes/boom');
  assert.deepEqual([boom.status, boom.text()], [500, 'exploded']);
  const plain = await c.request('GET', '/notes/plain');
  assert.deepEqual([plain.status, plain.text(), plain.header('x-a')], [202, 'plain', '1']);
  const wrongMethod = await c.request('DELETE', '/notes/n-1');
  assert.deepEqual([wrongMethod.status, wrongMethod.text()], [405, 'method not allowed']);
  const nowhere = await c.request('GET', '/elsewhere');
  assert.deepEqual([nowhere.status, nowhere.text()], [404, 'no such route']);
  // Declared but not registered: the SDK does not serve it.
  assert.equal((await c.request('GET', '/files/note-1.txt')).status, 404);
});

test('the mock file: answers, failures with needed scopes, and its errors', async () => {
  const file = JSON.stringify({
    'notes.get': { ok: true, scopes: ['notes.read'], result: [{ id: 'n-2' }] },
    'mail.send': { ok: false, error: { decision: 'scope_denied', message: 'mail is not connected', neededScopes: ['mail.send'] } },
  });
  const c = new TestClient(app).grant(['notes.read']).mockFile(file);
  assert.deepEqual(await c.callTool('read_note', { id: 'n-2' }), { id: 'n-2' });
  const e = await c.ctx().tools.call('mail.send', {}).catch((err) => err);
  assert.deepEqual(e.toRecord(), { toolName: 'mail.send', decision: 'scope_denied', message: 'mail is not connected', neededScopes: ['mail.send'] });
  assert.throws(() => parseMockFile('['), /^Error: the mock file is not valid JSON: /);
  assert.throws(() => parseMockFile('[]'), /the mock file must be a JSON object mapping tool names to answers/);
  assert.throws(() => parseMockFile('{"c": {}}'), /mock `c` needs `ok`: true or false/);
  assert.deepEqual(parseMockFile({ a: { ok: true } }), [{ name: 'a', scopes: [], result: null }]);
});

test('answers for team, apps and agent, and a TestClient needs an App', async () => {
  const c = new TestClient(app).answerTeam('editor', (prompt) => `edited: ${prompt}`);
  assert.equal(await c.ctx().team.delegate('editor', 'draft', { fromAgent: 'writer' }), 'edited: draft');
  c.answerTeam('editor', new AgentCallError({ reason: 'busy' }));
  assert.equal((await c.ctx().team.delegate('editor', 'draft', { fromAgent: 'writer' }).catch((e) => e)).reason, 'busy');
  assert.deepEqual(c.agentCalls, ['delegate editor', 'delegate editor']);
  assert.throws(() => new TestClient({}), TypeError);
  assert.deepEqual(c.registration().events, ['contact_changed']);
});

test('without(capability): not_available after the sandbox rules, as on a host without it', async () => {
  const c = new TestClient(app).grant('rooms.write').without('events.emit', ['rooms.post']);
  const ctx = c.ctx();
  const emit = await ctx.events.emit('note_saved', { id: 1 }).catch((e) => e);
  assert.ok(emit instanceof AgentCallError);
  assert.equal(emit.reason, 'not_available: `events.emit` is not available on this host');
  assert.equal(emit.notAvailable, 'events.emit');
  const post = await ctx.rooms.post('room-1', 'hi', { fromAgent: 'writer' }).catch((e) => e);
  assert.ok(post instanceof ToolCallError);
  assert.equal(post.decision, 'not_available');
  assert.equal(post.message, '`rooms.post` is not available on this host');
  assert.equal(post.notAvailable, 'rooms.post');
  // A sandbox rule still answers first.
  const ghost = await ctx.rooms.post('room-1', 'hi', { fromAgent: 'ghost' }).catch((e) => e);
  assert.equal(ghost.decision, 'unknown_agent');
  assert.equal(ghost.notAvailable, null);
  assert.deepEqual(c.emitted, []);
  assert.equal(c.rooms.posts.length, 0);
  // What is not switched off still answers.
  assert.equal(await ctx.agent.ask('hello'), '[sdk-fixture:writer] hello');
  assert.equal(new AgentCallError({ reason: 'no grant: none' }).notAvailable, null);
  assert.throws(() => new TestClient(app).without('agent.tell'), /agent\.tell/);
});
