// `App`: the registry of an app's handlers, checked against its manifest. Every registration
// follows the rules of docs/sdk.md and fails with a `RegistrationError` worded as the Rust
// SDK's (guest-sdk/src/app.rs); TypeScript adds one rule: a handler is an async function.

import { IN_COMPONENT } from '#platform';

import {
  FailedError,
  InvalidInputError,
  NoHandlerError,
  RegistrationError,
  RegistrationErrorKind as Kind,
  messageOf,
} from './errors.js';
import { HttpResponse, asResponse, matchRoute } from './http.js';
import { jsonText } from './json.js';
import { declarations, readValidated, validateText } from './manifest.js';

/** The lifecycle hooks, named as in the manifest, in the order `describe` lists them. */
const HOOKS = ['on_install', 'on_uninstall', 'on_inbound', 'on_user_added'];

const AsyncFunction = Object.getPrototypeOf(async function () {}).constructor;

/**
 * Every App made in this process, in order (the component glue serves the one the entry
 * exports); a global, so that the build tool sees the Apps of a project's own SDK copy.
 */
export const createdApps = (globalThis[Symbol.for('atrium.sdk.apps')] ??= []);

function listing(names) {
  return names.length === 0 ? 'none are declared' : `declared: ${names.join(', ')}`;
}

function fail(kind, message) {
  return new RegistrationError(kind, message);
}

function double(what, name) {
  return fail(Kind.DoubleRegistration, `cannot register ${what} \`${name}\` twice: a handler is already registered`);
}

/** Handlers must return a promise: only `async` functions are accepted (checked at registration). */
function requireAsync(subject, handler) {
  if (handler instanceof AsyncFunction) return;
  const got = typeof handler === 'function' ? 'a function that is not async' : handler === null ? 'null' : typeof handler;
  throw fail(
    Kind.NotAsync,
    `cannot register ${subject}: the handler must be an async function (a TypeScript handler returns a promise; got ${got})`,
  );
}

/** A handler's result as JSON text (nothing returned is `null`). */
function serialize(value) {
  return jsonText(value === undefined ? null : value, (why) => new FailedError(`the result does not serialize: ${why}`));
}

function parseJson(text, what) {
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new InvalidInputError(`${what}: ${e.message}`);
  }
}

function parseMetadata(text) {
  if (typeof text !== 'string') return text ?? {};
  try {
    return JSON.parse(text);
  } catch {
    return {};
  }
}

/** A room message as handlers see it: the WIT record with `metadata` parsed. */
export function roomMessageFromWire(message) {
  return { ...message, metadata: parseMetadata(message.metadata) };
}

/**
 * An app: its manifest and the handlers registered for it. Make one with
 * `App.fromManifest(path)`.
 */
export class App {
  /** An app for a validated manifest: `{text, manifest}` (the text as written, the normalised form). */
  constructor({ text, manifest }) {
    /** The manifest text as written. */
    this.manifestText = text;
    /** The normalised manifest (the host's model as JSON). */
    this.manifest = manifest;
    this._decl = declarations(manifest);
    this._tools = new Map();
    this._hooks = new Map();
    this._schedules = new Map();
    this._events = new Map();
    this._roomMessage = null;
    this._routes = [];
    createdApps.push(this);
  }

  /**
   * An app for the manifest file at `path`, loaded and strictly validated (`ManifestError`
   * otherwise). On Node.js a relative path is looked up from the working directory, then from
   * the calling module's directory up to its package root; inside a component the build's
   * embedded copy is used.
   */
  static fromManifest(path = 'atrium.app.yaml') {
    return new App(readValidated(path, new Error().stack));
  }

  /** An app for a manifest given as text (validated like `loadManifestFromString`). */
  static fromManifestString(text, file = 'atrium.app.yaml') {
    return new App(validateText(text, file));
  }

  /** Whether this code runs inside a component (else on Node.js). */
  static get inComponent() {
    return IN_COMPONENT;
  }

  /**
   * Registers the handler of tool `name`, declared in the manifest's `tools`:
   * `app.tool(name, handler)` or `app.tool(name, {description, scopesRequired}, handler)`.
   * The handler gets `(ctx, args)` (the arguments object) and resolves to a JSON value.
   */
  tool(name, options, handler) {
    if (handler === undefined && (typeof options === 'function' || options === undefined)) {
      handler = options;
      options = {};
    }
    options = options ?? {};
    if (typeof options !== 'object' || Array.isArray(options)) {
      throw new TypeError(`cannot register tool \`${name}\`: the options are {description, scopesRequired} (got ${typeof options === 'object' ? 'a list' : typeof options})`);
    }
    const d = this._decl;
    if (!d.tools.includes(name)) {
      throw fail(Kind.UnknownTool, `cannot register tool \`${name}\`: it is not in the manifest's tools (${listing(d.tools)})`);
    }
    const scopes = options.scopesRequired ?? [];
    if (!Array.isArray(scopes) || !scopes.every((s) => typeof s === 'string')) {
      throw new TypeError(`cannot register tool \`${name}\`: scopesRequired must be a list of scope names`);
    }
    const outside = scopes.filter((s) => !d.requiredScopes.includes(s));
    if (outside.length > 0) {
      throw fail(
        Kind.ScopeNotRequired,
        `cannot register tool \`${name}\`: scopes_required ${outside.join(', ')} must be a subset of the manifest's required_scopes (${listing(d.requiredScopes)})`,
      );
    }
    requireAsync(`tool \`${name}\``, handler);
    if (this._tools.has(name)) throw double('tool', name);
    // `description` is documentation in the code: the planner reads the manifest's.
    this._tools.set(name, handler);
    return this;
  }

  _hook(hook, handler) {
    if (!this._decl.lifecycle[hook]) {
      throw fail(Kind.LifecycleDisabled, `cannot register ${hook}: lifecycle.${hook} is not true in the manifest`);
    }
    requireAsync(hook, handler);
    if (this._hooks.has(hook)) throw double('lifecycle hook', hook);
    this._hooks.set(hook, handler);
    return this;
  }

  /** Registers `on_install` (`(ctx)`); needs `lifecycle.on_install: true`. */
  onInstall(handler) {
    return this._hook('on_install', handler);
  }

  /** Registers `on_uninstall` (`(ctx)`); needs `lifecycle.on_uninstall: true`. */
  onUninstall(handler) {
    return this._hook('on_uninstall', handler);
  }

  /** Registers `on_inbound` (`(ctx, envelope)`); needs `lifecycle.on_inbound: true`. */
  onInbound(handler) {
    return this._hook('on_inbound', handler);
  }

  /** Registers `on_user_added` (`(ctx, user)`); needs `lifecycle.on_user_added: true`. */
  onUserAdded(handler) {
    return this._hook('on_user_added', handler);
  }

  /** Registers the handler of schedule `name` (`(ctx)`), declared in `lifecycle.schedules`. */
  onSchedule(name, handler) {
    const schedules = this._decl.lifecycle.schedules;
    if (!schedules.includes(name)) {
      throw fail(
        Kind.UnknownSchedule,
        `cannot register schedule \`${name}\`: it is not in lifecycle.schedules (${listing(schedules)})`,
      );
    }
    requireAsync(`schedule \`${name}\``, handler);
    if (this._schedules.has(name)) throw double('schedule', name);
    this._schedules.set(name, handler);
    return this;
  }

  /**
   * Registers the handler of event `name` (`(ctx, event)`, resolving to a JSON value); one
   * handler per event name, shared by every emitter the manifest subscribes to (told apart by
   * `event.emitterAppId`).
   */
  onEvent(name, handler) {
    const subs = this._decl.subscriptions;
    if (!subs.some((s) => s.eventName === name)) {
      throw fail(
        Kind.UnknownEvent,
        `cannot register event handler \`${name}\`: the manifest's subscribes_to has no such event (${listing(subs.map((s) => s.eventName))})`,
      );
    }
    requireAsync(`event handler \`${name}\``, handler);
    if (this._events.has(name)) throw double('event', name);
    this._events.set(name, handler);
    return this;
  }

  /**
   * Registers the room `on_message` handler (`(ctx, agentSlug, message)`); the manifest must
   * declare at least one agent.
   */
  onMessage(handler) {
    if (this._decl.agents.length === 0) {
      throw fail(Kind.NoAgent, 'cannot register on_message: the manifest declares no agent to be mentioned');
    }
    requireAsync('on_message', handler);
    if (this._roomMessage) throw double('room handler', 'on_message');
    this._roomMessage = handler;
    return this;
  }

  /**
   * Registers the handler of a route declared in `http_routes` (same method and path):
   * `(ctx, request)` resolving to an `HttpResponse`.
   */
  route(method, path, handler) {
    const upper = String(method).toUpperCase();
    const declared = this._decl.routes.find((r) => r.method === upper && r.path === path);
    if (!declared) {
      throw fail(
        Kind.UnknownRoute,
        `cannot register route \`${upper} ${path}\`: it is not in the manifest's http_routes (${listing(this._decl.routes.map((r) => `${r.method} ${r.path}`))})`,
      );
    }
    requireAsync(`route \`${upper} ${path}\``, handler);
    if (this._routes.some((r) => r.method === upper && r.path === path)) throw double('route', `${upper} ${path}`);
    this._routes.push({ method: upper, path, handler });
    return this;
  }

  /** What is registered, as the host's health check reads it (the WIT `registration`). */
  registration() {
    return {
      manifest: this.manifestText,
      tools: [...this._tools.keys()].sort(),
      lifecycle: HOOKS.filter((h) => this._hooks.has(h)),
      schedules: [...this._schedules.keys()].sort(),
      events: [...this._events.keys()].sort(),
      roomMessages: this._roomMessage !== null,
      routes: this._routes.map((r) => `${r.method} ${r.path}`),
    };
  }

  // Running handlers. Each answers the handler's result or throws the error to report; the
  // dispatch layer (dispatch.js) turns that into the WIT `result`.

  /** Runs tool `name` with JSON arguments (text); answers the JSON result (text). */
  async callTool(ctx, name, argsText) {
    const handler = this._tools.get(name);
    if (!handler) throw new NoHandlerError(`tool \`${name}\``);
    const args = parseJson(argsText, 'the arguments do not match');
    if (args === null || typeof args !== 'object' || Array.isArray(args)) {
      throw new InvalidInputError('the arguments do not match: expected a JSON object');
    }
    return serialize(await handler(ctx, args));
  }

  /** Runs `on_install` or `on_uninstall` by its manifest name. */
  async lifecycle(ctx, hook) {
    const handler = hook === 'on_install' || hook === 'on_uninstall' ? this._hooks.get(hook) : undefined;
    if (!handler) throw new NoHandlerError(hook);
    await handler(ctx);
  }

  /** Runs `on_inbound` with the WIT envelope. */
  async inbound(ctx, envelope) {
    const handler = this._hooks.get('on_inbound');
    if (!handler) throw new NoHandlerError('on_inbound');
    await handler(ctx, {
      messageId: envelope.messageId,
      channel: envelope.channel,
      from: envelope.from,
      body: envelope.body,
      subject: envelope.subject ?? null,
      receivedAt: envelope.receivedAt,
      attachmentIds: [...(envelope.attachmentIds ?? [])],
      metadata: parseMetadata(envelope.metadata),
    });
  }

  /** Runs `on_user_added` with the WIT user. */
  async userAdded(ctx, user) {
    const handler = this._hooks.get('on_user_added');
    if (!handler) throw new NoHandlerError('on_user_added');
    await handler(ctx, { userId: user.userId, displayName: user.displayName, email: user.email ?? null });
  }

  /** Runs the handler of schedule `name`. */
  async schedule(ctx, name) {
    const handler = this._schedules.get(name);
    if (!handler) throw new NoHandlerError(`schedule \`${name}\``);
    await handler(ctx);
  }

  /** Runs the handler of an event (the WIT `app-event`); answers its JSON result (text). */
  async event(ctx, event) {
    const handler = this._events.get(event.eventName);
    if (!handler) throw new NoHandlerError(`event \`${event.eventName}\``);
    const payload = parseJson(event.payload, 'the event payload is not JSON');
    const result = await handler(ctx, {
      eventName: event.eventName,
      emitterAppId: event.emitterAppId,
      payload,
      targetAgentSlug: event.targetAgentSlug ?? null,
    });
    return serialize(result);
  }

  /** Runs the room `on_message` handler for the mentioned agent. */
  async roomMessage(ctx, agentSlug, message) {
    if (!this._roomMessage) throw new NoHandlerError('on_message');
    await this._roomMessage(ctx, agentSlug, roomMessageFromWire(message));
  }

  /**
   * Serves a request on the registered routes: 404 when no registered route matches the path,
   * 405 when one matches with another method, 400 for an `InvalidInputError`, 500 for any
   * other failure. Never throws.
   */
  async serve(ctx, request) {
    let pathMatched = false;
    for (const route of this._routes) {
      const params = matchRoute(route.path, request.path);
      if (params === null) continue;
      pathMatched = true;
      if (route.method !== request.method.toUpperCase()) continue;
      request.params = Object.fromEntries(params);
      try {
        return asResponse(await route.handler(ctx, request));
      } catch (e) {
        if (e instanceof InvalidInputError) return HttpResponse.text(400, e.message);
        return HttpResponse.text(500, messageOf(e));
      }
    }
    return pathMatched ? HttpResponse.text(405, 'method not allowed') : HttpResponse.text(404, 'no such route');
  }
}
