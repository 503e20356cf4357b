// The component glue (src/component.js) on Node.js, against a fake host: its imports
// (`atrium:app/*@0.1.0`, `wasi:http/types@0.2.12`) are resolved to fakes by a loader, so the
// exports' answers (WIT results, never a throw), the import errors' conversion and the
// hand-written wasi:http incoming handler are checked without building a component.

import assert from 'node:assert/strict';
import { register } from 'node:module';
import { test } from 'node:test';

const INTERFACES = {
  context: ['current', 'publicCallbackUrl'],
  tools: ['call'],
  secrets: ['get'],
  config: ['get', 'all'],
  rooms: ['post'],
  team: ['delegate'],
  apps: ['invoke', 'fetch'],
  events: ['emit'],
  agent: ['ask'],
  commitments: ['add'],
  logging: ['log'],
};
const hooks = `
const INTERFACES = ${JSON.stringify(INTERFACES)};
export async function resolve(specifier, context, next) {
  const atrium = /^atrium:app\\/([a-z]+)@0\\.1\\.0$/.exec(specifier);
  let source;
  if (atrium) {
    source = INTERFACES[atrium[1]].map((f) => 'export const ' + f + ' = (...a) => globalThis.__atriumFakeHost.' + atrium[1] + '.' + f + '(...a);').join('\\n');
  } else if (specifier === 'wasi:http/types@0.2.12') {
    source = ['Fields', 'OutgoingBody', 'OutgoingResponse', 'ResponseOutparam'].map((c) => 'export const ' + c + ' = globalThis.__atriumFakeHost.http.' + c + ';').join('\\n');
  } else {
    return next(specifier, context);
  }
  return { url: 'data:text/javascript,' + encodeURIComponent(source), shortCircuit: true };
}
`;
register(`data:text/javascript,${encodeURIComponent(hooks)}`);

const dispose = Symbol.dispose || Symbol.for('dispose');
const log = [];
const written = { status: null, headers: null, chunks: [], finished: false, disposed: [] };

class ComponentError extends Error {
  constructor(payload) {
    super('component error');
    this.payload = payload;
  }
}

class Fields {
  constructor(entries = []) {
    this.entries = entries;
  }
  static fromList(entries) {
    return new Fields(entries);
  }
}
class OutgoingResponse {
  constructor(headers) {
    written.headers = headers.entries.map(([k, v]) => [k, new TextDecoder().decode(v)]);
  }
  setStatusCode(status) {
    written.status = status;
  }
  body() {
    return {
      write: () => ({
        blockingWriteAndFlush: (chunk) => {
          assert.ok(chunk.length <= 4096, 'at most 4096 bytes per write');
          written.chunks.push(Buffer.from(chunk));
        },
        [dispose]: () => written.disposed.push('stream'),
      }),
    };
  }
}
const fakeHost = {
  context: {
    current: () => ({ tenantId: 't-1', appId: 'sdk-fixture', appVersion: '0.1.0', callId: 'c-1', chainDepth: 1, visitedAgents: [], publicRoute: false }),
    publicCallbackUrl: (path) => {
      throw new ComponentError(`\`${path}\` matches no public route`);
    },
  },
  tools: {
    call: (name, args) => {
      if (name === 'denied') throw new ComponentError({ toolName: name, decision: 'scope_denied', message: 'no', neededScopes: ['notes.read'] });
      return JSON.stringify({ name, args: JSON.parse(args) });
    },
  },
  secrets: { get: (key) => (key === 'KEY' ? 'v' : undefined) },
  config: { get: () => undefined, all: () => '{}' },
  rooms: { post: () => { throw new ComponentError({ toolName: 'rooms.post', decision: 'not_member', message: 'not a member', neededScopes: [] }); } },
  team: { delegate: () => { throw new ComponentError({ reason: 'team delegation denied' }); } },
  apps: { invoke: () => 'ok', fetch: () => ({ status: 200, headers: [], body: new Uint8Array() }) },
  events: { emit: () => ({ wireCount: 1, dispatched: 1, failures: 0 }) },
  agent: { ask: () => 'answer' },
  commitments: { add: () => 'c-1' },
  logging: { log: (level, message) => log.push([level, message]) },
  http: {
    Fields,
    OutgoingResponse,
    OutgoingBody: { finish: () => { written.finished = true; } },
    ResponseOutparam: { set: (out, result) => { assert.equal(result.tag, 'ok'); out.set = true; } },
  },
};
globalThis.__atriumFakeHost = fakeHost;

const { exportApp } = await import('../src/component.js');
const { App, HttpResponse, InvalidInputError, RegistrationError } = await import('../src/index.js');

const app = App.fromManifest('fixtures/atrium.app.yaml')
  .tool('ping_tool', async (ctx, args) => ({ tenant: ctx.tenantId, args, secret: ctx.secrets.get('KEY'), tool: await ctx.tools.call('t', { a: 1 }) }))
  .tool('read_note', async (ctx) => ctx.tools.call('denied', {}))
  .tool('use_ctx', async (ctx, args) => {
    if (args.what === 'room') return ctx.rooms.post('r', 'hi', { fromAgent: 'writer' });
    if (args.what === 'team') return ctx.team.delegate('editor', 'p', { fromAgent: 'writer' });
    if (args.what === 'url') return ctx.publicCallbackUrl('/nope');
    throw new InvalidInputError('what?');
  })
  .onInstall(async (ctx) => ctx.logger.info(`installed ${ctx.tenantId}`))
  .route('POST', '/hook', async (ctx, request) => HttpResponse.json({ got: request.text().length, q: request.query, h: request.header('x-a') }))
  .route('GET', '/notes/{id}', async (ctx, request) => new HttpResponse(200, [['Content-Type', 'text/plain']], 'x'.repeat(10_000)));

const { handlers, incomingHandler } = exportApp({ default: app });

test('handlers answer WIT results and never throw', async () => {
  const describe = await handlers.describe();
  assert.equal(describe.tag, 'ok');
  assert.deepEqual(describe.val.tools, ['ping_tool', 'read_note', 'use_ctx']);
  assert.deepEqual(await handlers.callTool('ping_tool', '{"x":1}'), {
    tag: 'ok',
    val: JSON.stringify({ tenant: 't-1', args: { x: 1 }, secret: 'v', tool: { name: 't', args: { a: 1 } } }),
  });
  assert.deepEqual(await handlers.callTool('read_note', '{}'), {
    tag: 'err',
    val: { tag: 'tool', val: { toolName: 'denied', decision: 'scope_denied', message: 'no', neededScopes: ['notes.read'] } },
  });
  assert.deepEqual(await handlers.callTool('use_ctx', '{"what":"room"}'), {
    tag: 'err',
    val: { tag: 'tool', val: { toolName: 'rooms.post', decision: 'not_member', message: 'not a member', neededScopes: [] } },
  });
  assert.deepEqual(await handlers.callTool('use_ctx', '{"what":"team"}'), { tag: 'err', val: { tag: 'agent', val: { reason: 'team delegation denied' } } });
  assert.deepEqual(await handlers.callTool('use_ctx', '{"what":"url"}'), { tag: 'err', val: { tag: 'failed', val: '`/nope` matches no public route' } });
  assert.deepEqual(await handlers.callTool('use_ctx', '{}'), { tag: 'err', val: { tag: 'invalid-input', val: 'what?' } });
  assert.deepEqual(await handlers.callTool('nope', '{}'), { tag: 'err', val: { tag: 'no-handler', val: 'tool `nope`' } });
  assert.deepEqual(await handlers.callTool('ping_tool', 'not json'), {
    tag: 'err',
    val: { tag: 'invalid-input', val: `the arguments do not match: ${(() => { try { JSON.parse('not json'); } catch (e) { return e.message; } })()}` },
  });
  assert.deepEqual(await handlers.onInstall(), { tag: 'ok', val: undefined });
  assert.deepEqual(log.at(-1), ['info', 'installed t-1']);
  assert.deepEqual(await handlers.onUninstall(), { tag: 'err', val: { tag: 'no-handler', val: 'on_uninstall' } });
  assert.deepEqual(await handlers.onEvent({ eventName: 'contact_changed', emitterAppId: 'crm', payload: '{}' }), {
    tag: 'err',
    val: { tag: 'no-handler', val: 'event `contact_changed`' },
  });
});

test('an entry that failed while registering answers registration on every call', async () => {
  const failed = exportApp(undefined, new RegistrationError('UnknownTool', 'cannot register tool `x`: ...')).handlers;
  for (const answer of [await failed.describe(), await failed.callTool('x', '{}'), await failed.onSchedule('hourly')]) {
    assert.deepEqual(answer, { tag: 'err', val: { tag: 'registration', val: 'cannot register tool `x`: ...' } });
  }
  const thrown = exportApp(undefined, new TypeError('boom')).handlers;
  assert.deepEqual(await thrown.describe(), { tag: 'err', val: { tag: 'registration', val: "the app's entry module failed while registering: boom" } });
  // One App made and none exported: that one is served; two: which one is unclear.
  assert.equal((await exportApp({}).handlers.describe()).tag, 'ok');
  App.fromManifest('fixtures/no-agents.yaml');
  const none = exportApp({}).handlers;
  const answer = await none.describe();
  assert.equal(answer.val.tag, 'registration');
  assert.match(answer.val.val, /^the entry module made \d+ Apps and exports none of them/);
});

/** A fake incoming request whose body arrives in `chunks`. */
function request(method, target, chunks, headers = []) {
  const disposed = [];
  const req = {
    method: () => (method === 'PROPFIND' ? { tag: 'other', val: method } : { tag: method.toLowerCase() }),
    pathWithQuery: () => target,
    headers: () => ({ entries: () => headers.map(([k, v]) => [k, new TextEncoder().encode(v)]), [dispose]: () => disposed.push('headers') }),
    consume: () => ({
      stream: () => {
        const queue = chunks.map((c) => new TextEncoder().encode(c));
        return {
          blockingRead: (n) => {
            assert.equal(typeof n, 'bigint');
            if (queue.length === 0) throw new ComponentError({ tag: 'closed' });
            return queue.shift();
          },
          [dispose]: () => disposed.push('stream'),
        };
      },
      [dispose]: () => disposed.push('body'),
    }),
  };
  return { req, disposed };
}

async function serve(method, target, chunks = [], headers = []) {
  Object.assign(written, { status: null, headers: null, chunks: [], finished: false, disposed: [] });
  const { req, disposed } = request(method, target, chunks, headers);
  const out = {};
  await incomingHandler.handle(req, out);
  assert.ok(out.set, 'the response outparam is set');
  assert.ok(written.finished, 'the body is finished');
  assert.deepEqual(written.disposed, ['stream'], 'the body stream is dropped before finishing');
  return { status: written.status, headers: written.headers, body: Buffer.concat(written.chunks).toString(), disposed };
}

test('the incoming handler reads the request and writes the response', async () => {
  const posted = await serve('POST', '/hook?x=1', ['ab', 'cd'], [['X-A', 'yes']]);
  assert.deepEqual([posted.status, posted.body], [200, '{"got":4,"q":"x=1","h":"yes"}']);
  assert.deepEqual(posted.headers, [['content-type', 'application/json']]);
  assert.deepEqual(posted.disposed, ['headers', 'stream', 'body']);
  const big = await serve('GET', '/notes/1');
  assert.equal(big.body.length, 10_000, 'a body over 4096 bytes is written in chunks');
  assert.deepEqual(big.headers, [['content-type', 'text/plain']]);
  assert.equal((await serve('DELETE', '/notes/1')).status, 405);
  assert.equal((await serve('PROPFIND', '/x')).status, 404);
  const tooLarge = await serve('POST', '/hook', Array.from({ length: 17 }, () => 'x'.repeat(65536)));
  assert.deepEqual([tooLarge.status, tooLarge.body], [413, 'the request body is larger than 1 MiB']);
});
