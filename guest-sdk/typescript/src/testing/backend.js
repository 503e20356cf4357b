// The mock platform behind a TestClient: every call first goes through the host's sandbox
// rules (./sandbox.js, the host's own code through the validator module), then the mocks
// answer.

import { AgentCallError, FailedError, ToolCallError } from '../errors.js';
import { toBytes } from '../http.js';
import { SandboxRefusal, sandboxFor } from './sandbox.js';

/** A deep copy of a JSON value (what crosses the WIT boundary is JSON). */
export function clone(value) {
  return value === undefined ? undefined : JSON.parse(JSON.stringify(value));
}

function reply(answer, input, fallback) {
  if (answer === undefined) return fallback;
  if (answer instanceof AgentCallError) throw answer;
  if (typeof answer === 'function') {
    const value = answer(input);
    if (value instanceof AgentCallError) throw value;
    return String(value);
  }
  return String(answer);
}

/** The platform of a TestClient: mocks behind the host's sandbox rules. */
export class MockBackend {
  /** A backend for the app whose manifest is `manifestText`; `info` is the call identity. */
  constructor(manifestText, info) {
    this.sandbox = sandboxFor(manifestText);
    this.info = info;
    this.tools = new Map();
    this.secrets = new Map();
    this.secretsReachable = true;
    this.settings = {};
    this.granted = new Set();
    this.toolCalls = [];
    this.emitted = [];
    this.logs = [];
    this.agentCalls = [];
    this.commitments = [];
    this.posts = [];
    this.httpMocks = new Map();
    this.httpRequests = [];
    this.answers = { team: new Map(), apps: new Map(), agent: new Map(), fetch: new Map() };
    this.wires = new Map();
    this.unavailable = new Set();
  }

  /** As a host without `capability`: decision `not_available`, after the sandbox rules. */
  refuseUnavailable(capability) {
    if (this.unavailable.has(capability)) this.sandbox.notAvailable(capability);
  }

  chain() {
    return { depth: this.info.chainDepth, visited: [...this.info.visitedAgents] };
  }

  callInfo() {
    return { ...this.info, visitedAgents: [...this.info.visitedAgents] };
  }

  publicCallbackUrl(path) {
    try {
      this.sandbox.publicCallbackPath(path);
    } catch (e) {
      throw e instanceof SandboxRefusal ? new FailedError(e.message) : e;
    }
    return `http://127.0.0.1:8787/api/apps/${this.info.appId}/public/t/${this.info.tenantId}${path}`;
  }

  callTool(name, args) {
    const parsed = this.sandbox.toolArguments(name, args);
    this.toolCalls.push([name, parsed]);
    const tool = this.tools.get(name);
    if (!tool) {
      throw new ToolCallError({ toolName: name, decision: 'unmocked', message: `tool \`${name}\` is not mocked`, neededScopes: [] });
    }
    this.sandbox.toolScopes(name, tool.scopes, [...this.granted]);
    this.refuseUnavailable('tools.call');
    if (tool.error) throw new ToolCallError(tool.error);
    return JSON.stringify(tool.result === undefined ? null : tool.result);
  }

  secret(key) {
    // As the host: a malformed key is logged for the developer and reads as unset.
    try {
      this.sandbox.secretKey(key);
    } catch (e) {
      if (!(e instanceof SandboxRefusal)) throw e;
      this.log('warn', e.message);
      return null;
    }
    if (!this.secretsReachable) throw new Error('the platform cannot be reached');
    return this.secrets.has(key) ? this.secrets.get(key) : null;
  }

  configGet(key) {
    return Object.hasOwn(this.settings, key) ? JSON.stringify(this.settings[key]) : null;
  }

  configAll() {
    return JSON.stringify(this.settings);
  }

  roomPost(roomId, content, fromAgent, metadata) {
    const checked = this.sandbox.roomPost(fromAgent, content, metadata, [...this.granted]);
    this.refuseUnavailable('rooms.post');
    this.posts.push({ roomId, content, fromAgent, metadata: metadata == null ? null : clone(checked.metadata) });
    return {
      message: {
        id: `00000000-0000-4000-8000-${this.posts.length.toString(16).padStart(12, '0')}`,
        roomId,
        tenantId: this.info.tenantId,
        senderType: 'agent',
        senderRef: checked.sender_ref,
        senderDisplay: checked.sender_display,
        content,
        mentions: this.sandbox.extractMentions(content),
        metadata: JSON.stringify(checked.metadata),
        createdAt: '2026-01-01T00:00:00Z',
      },
      routedTargets: [],
    };
  }

  delegate(target, prompt, fromAgent) {
    this.sandbox.delegate(this.chain(), this.info.publicRoute, target, fromAgent);
    this.refuseUnavailable('team.delegate');
    this.agentCalls.push(`delegate ${target}`);
    return reply(this.answers.team.get(target), prompt, `[${this.info.appId}:${target}] ${prompt}`);
  }

  invoke(app, agent, prompt) {
    this.sandbox.invoke(this.chain(), this.info.publicRoute, app, agent);
    this.refuseUnavailable('apps.invoke');
    this.agentCalls.push(`invoke ${app}:${agent}`);
    return reply(this.answers.apps.get(`${app}:${agent}`), prompt, `[${app}:${agent}] ${prompt}`);
  }

  fetch(app, path, method, body) {
    const { method: upper } = this.sandbox.fetch(this.chain(), path, method);
    this.refuseUnavailable('apps.fetch');
    this.agentCalls.push(`fetch ${app} ${upper} ${path}`);
    const answer = this.answers.fetch.get(`${app} ${path}`);
    if (answer instanceof AgentCallError) throw answer;
    if (typeof answer === 'function') return normaliseResponse(answer({ method: upper, path, body }));
    if (answer !== undefined) return normaliseResponse(answer);
    return { status: 200, headers: [], body: toBytes('{}') };
  }

  emit(name, payload) {
    const { payload: parsed } = this.sandbox.emit(this.chain(), this.info.publicRoute, name, payload);
    this.refuseUnavailable('events.emit');
    this.emitted.push([name, parsed]);
    const wires = this.wires.get(name) ?? 0;
    return { wireCount: wires, dispatched: wires, failures: 0 };
  }

  ask(prompt, agent) {
    const { agent: slug } = this.sandbox.ask(this.chain(), agent);
    this.refuseUnavailable('agent.ask');
    this.agentCalls.push(`ask ${slug}`);
    return reply(this.answers.agent.get(slug), prompt, `[${this.info.appId}:${slug}] ${prompt}`);
  }

  addCommitment(title, content, fromAgent, dueAt) {
    this.sandbox.commitment(title, content, fromAgent, dueAt);
    this.refuseUnavailable('commitments.add');
    this.commitments.push([title, content, fromAgent, dueAt]);
    return `commitment-${this.commitments.length}`;
  }

  log(level, message) {
    this.logs.push([level, message]);
  }

  async httpSend(request) {
    // The host the engine's `fetch` hands to wasi:http: the WHATWG URL's (lower-case,
    // punycode, no port or user; an IPv6 address in brackets).
    let host;
    try {
      host = new URL(request.url).hostname;
    } catch {
      throw new Error(`\`${request.url}\` is not a valid URL`);
    }
    if (!this.sandbox.egress(host)) {
      throw new Error(`request refused: HttpRequestDenied (\`${host}\` is not in network.egress_hosts)`);
    }
    this.httpRequests.push({ ...request, headers: request.headers.map(([k, v]) => [k, v]) });
    const mocked = this.httpMocks.get(request.url);
    if (mocked === undefined) throw new Error(`no mock response for ${request.url}`);
    return normaliseResponse(typeof mocked === 'function' ? mocked(request) : mocked);
  }
}

/** `{status, headers, body}` with the body as bytes (JSON for an object body). */
export function normaliseResponse(response) {
  const status = response?.status ?? 200;
  const headers = Array.isArray(response?.headers) ? response.headers : Object.entries(response?.headers ?? {});
  let body = response?.body ?? null;
  if (body !== null && typeof body === 'object' && !(body instanceof Uint8Array) && !(body instanceof ArrayBuffer) && !ArrayBuffer.isView(body)) {
    body = JSON.stringify(body);
  }
  return { status, headers: headers.map(([k, v]) => [String(k), String(v)]), body: toBytes(body) };
}
