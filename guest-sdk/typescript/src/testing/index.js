// `@atrium/sdk/testing`: run an app's handlers on Node.js, without a component, against mock
// tools, secrets, settings and rooms (mock tools and secrets, `MockRooms`, `simulateEvent`;
// docs/sdk.md). Every call the app makes goes through the host's sandbox rules first (the
// host's own code, run from the validator module), so a test fails where the real host would
// refuse, with the same decision and message; then the
// mocks answer: a tool that is not mocked fails with decision `unmocked`, a tool mocked with
// scopes the test did not grant fails with `scope_denied`.

import { App } from '../app.js';
import { Ctx } from '../ctx.js';
import { handlersFor } from '../dispatch.js';
import { AgentCallError, CAPABILITIES, HandlerError, ToolCallError } from '../errors.js';
import { HttpRequest } from '../http.js';
import { jsonText } from '../json.js';
import { declarations } from '../manifest.js';
import { MockBackend, clone, normaliseResponse } from './backend.js';
import { mockFileEntries } from './sandbox.js';

export { HandlerError };

/** Records every `ctx.rooms.post` call. */
export class MockRooms {
  constructor(backend) {
    Object.defineProperty(this, '_backend', { value: backend });
  }

  /** Every post made so far, in order: `{roomId, content, fromAgent, metadata}`. */
  get posts() {
    return this._backend.posts.map((p) => ({ ...p, metadata: clone(p.metadata) ?? null }));
  }
}

/** A room message for tests: posted by a user (`metadata` `{}`), as the platform delivers it. */
export function roomMessage(roomId, content, overrides = {}) {
  return {
    id: '00000000-0000-4000-8000-000000000001',
    roomId,
    tenantId: 'tenant-test',
    senderType: 'user',
    senderRef: 'user:00000000-0000-4000-8000-0000000000aa',
    senderDisplay: 'Test User',
    content,
    mentions: [],
    metadata: '{}',
    createdAt: '2026-01-01T00:00:00Z',
    ...overrides,
  };
}

/** An inbound envelope for tests (an e-mail), with `overrides`. */
export function inboundEnvelope(overrides = {}) {
  return {
    messageId: 'msg-1',
    channel: 'email',
    from: 'someone@example.com',
    body: '',
    subject: null,
    receivedAt: '2026-01-01T00:00:00Z',
    attachmentIds: [],
    metadata: '{}',
    ...overrides,
  };
}

/** Metadata as it crosses the WIT boundary: JSON text (an object is serialized, none is `{}`). */
function metadataText(metadata) {
  return typeof metadata === 'string' ? metadata : JSON.stringify(metadata ?? {});
}

/** Parses the developer tool's mock file (`atrium.dev.json`): `[{name, scopes, result | error}]`. */
export function parseMockFile(text) {
  const source = typeof text === 'string' ? text : JSON.stringify(text ?? null);
  return mockFileEntries(source).map(({ name, scopes, result, error }) =>
    error
      ? { name, scopes, error: { toolName: name, decision: error.decision, message: error.message, neededScopes: error.needed_scopes } }
      : { name, scopes, result: result ?? null },
  );
}

/** Runs an app natively against mocks. */
export class TestClient {
  /**
   * A client for `app`. Options: `tenantId` (default `tenant-test`), `chainDepth` (1),
   * `visitedAgents` ([]), `publicRoute` (false).
   */
  constructor(app, { tenantId = 'tenant-test', chainDepth = 1, visitedAgents = [], publicRoute = false } = {}) {
    if (!(app instanceof App)) throw new TypeError('TestClient needs an App (App.fromManifest(...))');
    this.app = app;
    const decl = declarations(app.manifest);
    this._subscriptions = decl.subscriptions;
    this._backend = new MockBackend(app.manifestText, {
      tenantId,
      appId: decl.appId,
      appVersion: decl.version,
      callId: 'call-test',
      chainDepth,
      visitedAgents: [...visitedAgents],
      publicRoute,
    });
    /** The room posts the app made. */
    this.rooms = new MockRooms(this._backend);
    this._handlers = handlersFor(() => this.app, this._backend);
  }

  /** Sets the tenant id the app sees. */
  withTenant(tenantId) {
    this._backend.info.tenantId = tenantId;
    return this;
  }

  /** Sets the chain depth (and the visited agents) the app sees. */
  withChain(depth, visitedAgents = []) {
    this._backend.info.chainDepth = depth;
    this._backend.info.visitedAgents = [...visitedAgents];
    return this;
  }

  /** Marks calls as arriving on a public route (or not). */
  asPublicRoute(on = true) {
    this._backend.info.publicRoute = on;
    return this;
  }

  /**
   * Answers each capability (`'agent.ask'`, `'rooms.post'`, ...) with decision `not_available`,
   * as a host that does not offer it does, after the sandbox rules: a test of the app's fallback.
   */
  without(...capabilities) {
    for (const capability of capabilities.flat()) {
      if (!CAPABILITIES.includes(capability)) {
        throw new TypeError(`\`${capability}\` is not a capability (${CAPABILITIES.join(', ')})`);
      }
      this._backend.unavailable.add(capability);
    }
    return this;
  }

  /** Grants scopes to the install: `grant('a', 'b')` or `grant(['a', 'b'])`. */
  grant(...scopes) {
    for (const scope of scopes.flat()) this._backend.granted.add(scope);
    return this;
  }

  /** Mocks a platform tool answering `result`; with `{scopes}` it needs them granted. */
  mockTool(name, result, { scopes = [] } = {}) {
    this._backend.tools.set(name, { scopes: [...scopes], result: clone(result) });
    return this;
  }

  /** Mocks a platform tool that fails: a `ToolCallError` or `{decision, message, neededScopes}`. */
  mockToolError(name, error, { scopes = [] } = {}) {
    const e = error instanceof ToolCallError ? error.toRecord() : error;
    this._backend.tools.set(name, {
      scopes: [...scopes],
      error: { toolName: e.toolName ?? name, decision: e.decision, message: e.message ?? '', neededScopes: [...(e.neededScopes ?? [])] },
    });
    return this;
  }

  /**
   * Loads mocks from the developer tool's mock file (its text, or the parsed object): tool
   * names mapped to `{"ok": true, "result": ...}` or `{"ok": false, "error": {"decision",
   * "message", "neededScopes"}}`, with an optional `scopes` list.
   */
  mockFile(text) {
    for (const tool of parseMockFile(text)) {
      this._backend.tools.set(tool.name, tool.error ? { scopes: tool.scopes, error: tool.error } : { scopes: tool.scopes, result: tool.result });
    }
    return this;
  }

  /** Sets a secret. */
  mockSecret(key, value) {
    this._backend.secrets.set(key, String(value));
    return this;
  }

  /** Makes the secrets API unreachable: `ctx.secrets.get` then answers null. */
  secretsUnreachable(on = true) {
    this._backend.secretsReachable = !on;
    return this;
  }

  /** Fills in an install setting. */
  setting(key, value) {
    this._backend.settings[key] = clone(value);
    return this;
  }

  /** Answers outbound requests to `url` (`{status, headers, body}` or a function of the request); the host must be in `network.egress_hosts`. */
  mockHttp(url, response) {
    this._backend.httpMocks.set(url, response);
    return this;
  }

  /** What `ctx.team.delegate` to `target` answers: a reply, a function of the prompt, or an `AgentCallError`. */
  answerTeam(target, answer) {
    this._backend.answers.team.set(target, answer);
    return this;
  }

  /** What `ctx.apps.invoke(app, agent, ...)` answers. */
  answerApp(app, agent, answer) {
    this._backend.answers.apps.set(`${app}:${agent}`, answer);
    return this;
  }

  /** What `ctx.apps.fetch(app, path, ...)` answers: `{status, headers, body}`, a function of `{method, path, body}`, or an `AgentCallError`. */
  answerFetch(app, path, answer) {
    this._backend.answers.fetch.set(`${app} ${path}`, answer instanceof AgentCallError ? answer : typeof answer === 'function' ? answer : normaliseResponse(answer));
    return this;
  }

  /** What `ctx.agent.ask` answers for agent `slug`. */
  answerAgent(slug, answer) {
    this._backend.answers.agent.set(slug, answer);
    return this;
  }

  /** How many approved wires carry event `name` (the `wireCount` of `ctx.events.emit`; default 0). */
  wire(name, count) {
    this._backend.wires.set(name, count);
    return this;
  }

  /** A fresh context over the mocks, as a handler gets one. */
  ctx() {
    return new Ctx(this._backend);
  }

  /** Platform tool calls made so far: `[name, args]`. */
  get toolCalls() {
    return clone(this._backend.toolCalls);
  }

  /** Events emitted so far: `[name, payload]`. */
  get emitted() {
    return clone(this._backend.emitted);
  }

  /** Log records written so far: `[level, message]`. */
  get logs() {
    return clone(this._backend.logs);
  }

  /** Nested agent calls made so far: `delegate <agent>`, `invoke <app>:<agent>`, `fetch <app> <METHOD> <path>`, `ask <agent>`. */
  get agentCalls() {
    return [...this._backend.agentCalls];
  }

  /** Commitments added so far: `[title, content, fromAgent, dueAt]`. */
  get commitments() {
    return clone(this._backend.commitments);
  }

  /** Outbound requests made so far: `{method, url, headers, body}`. */
  get httpRequests() {
    return this._backend.httpRequests.map((r) => ({ ...r, headers: r.headers.map(([k, v]) => [k, v]) }));
  }

  /** What the app registered (the health check's answer). */
  registration() {
    return this.app.registration();
  }

  async _unwrap(pending, parse = false) {
    const result = await pending;
    if (result.tag === 'err') throw new HandlerError(result.val);
    return parse ? JSON.parse(result.val) : undefined;
  }

  /** Calls a tool; resolves to its result, rejects with a `HandlerError`. */
  async callTool(name, args = {}) {
    const text = jsonText(args, (why) => new HandlerError({ tag: 'invalid-input', val: `the arguments do not serialize: ${why}` }));
    return this._unwrap(this._handlers.callTool(name, text), true);
  }

  /** Runs `on_install`. */
  install() {
    return this._unwrap(this._handlers.onInstall());
  }

  /** Runs `on_uninstall`. */
  uninstall() {
    return this._unwrap(this._handlers.onUninstall());
  }

  /** Runs `on_inbound` with an envelope (see `inboundEnvelope`). */
  inbound(envelope) {
    const wire = { ...inboundEnvelope(), ...envelope };
    wire.metadata = metadataText(wire.metadata);
    if (wire.subject === null) wire.subject = undefined;
    return this._unwrap(this._handlers.onInbound(wire));
  }

  /** Runs `on_user_added` with `{userId, displayName, email}`. */
  userAdded(user) {
    return this._unwrap(this._handlers.onUserAdded({ ...user, email: user.email ?? undefined }));
  }

  /** Runs schedule `name`. */
  schedule(name) {
    return this._unwrap(this._handlers.onSchedule(name));
  }

  /** Delivers a room message (see `roomMessage`) that mentions agent `agent`. */
  roomMessage(agent, message) {
    const wire = { ...message, metadata: metadataText(message.metadata) };
    return this._unwrap(this._handlers.onMessage(agent, wire));
  }

  /**
   * Delivers an event as the platform would; resolves to the handler's result. Without
   * `emitterAppId` the emitter is the first the manifest subscribes to for that name. The
   * event names the agent of that emitter's subscription (`targetAgentSlug`), as the platform
   * routes it; none for an emitter the manifest does not subscribe to.
   */
  async simulateEvent(eventName, payload = {}, { emitterAppId } = {}) {
    const named = this._subscriptions.filter((s) => s.eventName === eventName);
    const emitter = emitterAppId ?? named[0]?.emitterApp ?? '';
    const subscription = named.find((s) => s.emitterApp === emitter);
    const event = {
      eventName,
      emitterAppId: emitter,
      payload: jsonText(payload, (why) => new HandlerError({ tag: 'invalid-input', val: `the event payload does not serialize: ${why}` })),
      targetAgentSlug: subscription?.targetAgent ?? undefined,
    };
    return this._unwrap(this._handlers.onEvent(event), true);
  }

  /**
   * Sends an HTTP request to the app's routes (`path` may carry a query); resolves to the
   * `HttpResponse` (never rejects: failures are 4xx/5xx answers).
   */
  async request(method, path, { body = null, headers = [] } = {}) {
    const at = path.indexOf('?');
    const request = new HttpRequest({
      method,
      path: at >= 0 ? path.slice(0, at) : path,
      query: at >= 0 ? path.slice(at + 1) : null,
      headers: Array.isArray(headers) ? headers : Object.entries(headers),
      body: body !== null && typeof body === 'object' && !ArrayBuffer.isView(body) && !(body instanceof ArrayBuffer) ? JSON.stringify(body) : body,
    });
    return this.app.serve(new Ctx(this._backend), request);
  }
}
