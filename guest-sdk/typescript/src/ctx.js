// `Ctx`: what a handler reaches the platform through (`ctx`, docs/sdk.md). Every call goes
// through a backend: the component's imports inside a component, the test backend in tests.
// The platform's imports are synchronous, so the promises of `ctx` resolve at once; they are
// promises so that handlers read the same on every platform (`await ctx.tools.call(...)`).

import { roomMessageFromWire } from './app.js';
import { AgentCallError, FailedError, ToolCallError } from './errors.js';
import { HttpResponse, toBytes } from './http.js';
import { jsonText } from './json.js';

/**
 * The platform as the SDK reaches it: the component's imports (src/component.js) or the test
 * backend (src/testing/backend.js). Every method mirrors one WIT import, with JSON as text;
 * a refusal throws `ToolCallError` (tools, rooms, commitments) or `AgentCallError` (team, apps,
 * events, agent), and `publicCallbackUrl` and `httpSend` throw an Error with a message.
 *
 * @typedef {object} Backend
 * @property {() => {tenantId: string, appId: string, appVersion: string, callId: string, chainDepth: number, visitedAgents: string[], publicRoute: boolean}} callInfo
 * @property {(path: string) => string} publicCallbackUrl
 * @property {(name: string, args: string) => string} callTool
 * @property {(key: string) => string | null} secret  a malformed key reads as null (the host logs why)
 * @property {(key: string) => string | null} configGet
 * @property {() => string} configAll
 * @property {(roomId: string, content: string, fromAgent: string, metadata: string | null) => object} roomPost
 * @property {(target: string, prompt: string, fromAgent: string) => string} delegate
 * @property {(app: string, agent: string, prompt: string) => string} invoke
 * @property {(app: string, path: string, method: string, body: Uint8Array | null) => {status: number, headers: [string, string][], body: Uint8Array}} fetch
 * @property {(name: string, payload: string) => {wireCount: number, dispatched: number, failures: number}} emit
 * @property {(prompt: string, agent: string | null) => string} ask
 * @property {(title: string, content: string, fromAgent: string, dueAt: string | null) => string} addCommitment
 * @property {(level: string, message: string) => void} log
 * @property {(request: {method: string, url: string, headers: [string, string][], body: Uint8Array}) => Promise<{status: number, headers: [string, string][], body: Uint8Array}>} httpSend
 */

const SECRET_KEY = /^[A-Z][A-Z0-9_]{0,63}$/;

/**
 * Whether `key` is a secret key (`^[A-Z][A-Z0-9_]{0,63}$`), for an app that checks keys it
 * builds. `ctx.secrets.get` leaves the check to the host (the test client to the host's code in
 * the validator module), which logs the warning for a malformed key.
 */
export function isSecretKey(key) {
  return typeof key === 'string' && SECRET_KEY.test(key);
}

function toolRefusal(toolName, decision, message) {
  return new ToolCallError({ toolName, decision, message, neededScopes: [] });
}

/** A failure of the platform's HTTP client (or of the test backend's) as a `FailedError`. */
function asFailed(e) {
  return e instanceof FailedError ? e : new FailedError(e?.message ?? String(e));
}

/** The context of one call. */
export class Ctx {
  constructor(backend) {
    Object.defineProperty(this, '_backend', { value: backend });
    Object.defineProperty(this, '_info', { value: null, writable: true });
    const b = backend;

    /** Platform tools. */
    this.tools = {
      /** Calls a platform tool with an arguments object; resolves to its JSON result. Rejects with `ToolCallError`. */
      async call(name, args = {}) {
        const argsText = jsonText(args, (why) => toolRefusal(String(name), 'invalid_arguments', `the arguments do not serialize: ${why}`));
        const text = b.callTool(String(name), argsText);
        try {
          return JSON.parse(text);
        } catch (e) {
          throw toolRefusal(String(name), 'invalid_result', `the result does not have the expected shape: ${e.message}`);
        }
      },
    };

    /** Secrets. */
    this.secrets = {
      /**
       * A secret's value, or null when it is not set, the key is malformed (it must match
       * `^[A-Z][A-Z0-9_]{0,63}$`; the host logs a warning and answers none) or the platform
       * cannot be reached. Never throws.
       */
      get(key) {
        try {
          const value = b.secret(String(key));
          return typeof value === 'string' ? value : null;
        } catch {
          return null;
        }
      },
    };

    /** The install settings. */
    this.config = {
      /** A setting's value (JSON), or null when it is not filled in. */
      get(key) {
        const text = b.configGet(String(key));
        if (typeof text !== 'string') return null;
        try {
          return JSON.parse(text);
        } catch {
          return null;
        }
      },
      /** Every filled-in setting, as an object. */
      all() {
        try {
          const all = JSON.parse(b.configAll());
          return all !== null && typeof all === 'object' && !Array.isArray(all) ? all : {};
        } catch {
          return {};
        }
      },
    };

    /** Group rooms. */
    this.rooms = {
      /**
       * Posts `content` to a room as the app's agent `fromAgent`, with an optional metadata
       * object; resolves to `{message, routedTargets}`. Rejects with `ToolCallError`.
       */
      async post(roomId, content, { fromAgent = '', metadata } = {}) {
        const meta =
          metadata === undefined || metadata === null
            ? null
            : jsonText(metadata, (why) => toolRefusal('rooms.post', 'invalid_arguments', `metadata does not serialize: ${why}`));
        const posted = b.roomPost(String(roomId), String(content), String(fromAgent), meta);
        return { message: roomMessageFromWire(posted.message), routedTargets: [...posted.routedTargets] };
      },
    };

    /** Team delegation. */
    this.team = {
      /** Delegates `prompt` to agent `target` of this app on behalf of `fromAgent`. Rejects with `AgentCallError`. */
      async delegate(target, prompt, { fromAgent = '' } = {}) {
        return b.delegate(String(target), String(prompt), String(fromAgent));
      },
    };

    /** Other apps. */
    this.apps = {
      /** Invokes agent `agent` of app `app`. Rejects with `AgentCallError`. */
      async invoke(app, agent, prompt) {
        return b.invoke(String(app), String(agent), String(prompt));
      },
      /**
       * Calls an HTTP route of app `app`: `fetch(app, path, {method, body})` or
       * `fetch(app, path, method, body)`; resolves to an `HttpResponse`. Rejects with `AgentCallError`.
       */
      async fetch(app, path, options = {}, body = undefined) {
        const opts = typeof options === 'string' ? { method: options, body } : (options ?? {});
        let bytes = null;
        if (opts.body !== undefined && opts.body !== null) {
          const json = typeof opts.body === 'object' && !ArrayBuffer.isView(opts.body) && !(opts.body instanceof ArrayBuffer);
          bytes = toBytes(json ? jsonText(opts.body, (why) => new AgentCallError({ reason: `the body does not serialize: ${why}` })) : opts.body);
        }
        const answer = b.fetch(String(app), String(path), String(opts.method ?? 'GET'), bytes);
        return new HttpResponse(answer.status, answer.headers, answer.body);
      },
    };

    /** Events. */
    this.events = {
      /** Emits event `name` (declared in `emits`); resolves to `{wireCount, dispatched, failures}`. Rejects with `AgentCallError`. */
      async emit(name, payload = {}) {
        const text = jsonText(payload, (why) => new AgentCallError({ reason: `the payload does not serialize: ${why}` }));
        const result = b.emit(String(name), text);
        return { wireCount: result.wireCount, dispatched: result.dispatched, failures: result.failures };
      },
    };

    /** The app's agents. */
    this.agent = {
      /** Asks one of the app's agents (the default one without `agent`). Rejects with `AgentCallError`. */
      async ask(prompt, { agent } = {}) {
        return b.ask(String(prompt), agent === undefined || agent === null ? null : String(agent));
      },
    };

    /** Commitments. */
    this.commitments = {
      /** Records a commitment of agent `fromAgent`; `dueAt` is ISO-8601 (or a Date). Resolves to its id. Rejects with `ToolCallError`. */
      async add(title, content, fromAgent, dueAt = null) {
        const due = dueAt instanceof Date ? dueAt.toISOString() : dueAt === undefined || dueAt === null ? null : String(dueAt);
        return b.addCommitment(String(title), String(content ?? ''), String(fromAgent ?? ''), due);
      },
    };

    const log = (level) => (message) => b.log(level, String(message));
    /** Structured logs. */
    this.logger = {
      trace: log('trace'),
      debug: log('debug'),
      info: log('info'),
      warn: log('warn'),
      error: log('error'),
    };

    /**
     * Sends a request `{method, url, headers, body}`; resolves to an `HttpResponse`. Rejects
     * with `FailedError` when the request is refused or fails.
     */
    const send = async ({ method = 'GET', url, headers = [], body = null } = {}) => {
      let request;
      try {
        const pairs = Array.isArray(headers) ? headers : Object.entries(headers ?? {});
        request = {
          method: String(method).toUpperCase(),
          url: String(url),
          headers: pairs.map(([k, v]) => [String(k), String(v)]),
          body: toBytes(body),
        };
      } catch (e) {
        throw new FailedError(`the request is not valid: ${e.message}`);
      }
      try {
        const answer = await b.httpSend(request);
        return new HttpResponse(answer.status, answer.headers, answer.body);
      } catch (e) {
        throw asFailed(e);
      }
    };
    /** Outbound HTTP to the hosts in `network.egress_hosts`. */
    this.http = {
      send,
      /** A GET request. */
      get: async (url, { headers = [] } = {}) => send({ method: 'GET', url, headers }),
    };
  }

  _callInfo() {
    if (this._info === null) this._info = this._backend.callInfo();
    return this._info;
  }

  /** The tenant the call is for. */
  get tenantId() {
    return this._callInfo().tenantId;
  }

  /** The app's slug. */
  get appId() {
    return this._callInfo().appId;
  }

  /** The app version serving the call. */
  get appVersion() {
    return this._callInfo().appVersion;
  }

  /** The call's id, as in the host's logs. */
  get callId() {
    return this._callInfo().callId;
  }

  /** How many agent hops led to this call (1 for a call from the platform itself). */
  get chainDepth() {
    return this._callInfo().chainDepth;
  }

  /** Canonical keys (`<app>:<agent>`) of the agents already on the call chain. */
  get visitedAgents() {
    return [...this._callInfo().visitedAgents];
  }

  /** Whether the call arrived on a public route (no tenant principal). */
  get isPublicRoute() {
    return this._callInfo().publicRoute;
  }

  /** The public URL of one of the app's public routes for this tenant; `FailedError` when none matches. */
  publicCallbackUrl(path) {
    try {
      return this._backend.publicCallbackUrl(String(path));
    } catch (e) {
      throw asFailed(e);
    }
  }
}
