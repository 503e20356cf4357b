// Types of @atrium/sdk (hand-written; the package is JavaScript so that it runs on Node.js 20
// without a compile step).

/** Any JSON value. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** A manifest finding, exactly as `atrium lint --json` prints it. */
export interface Finding {
  file: string;
  path: string;
  code: string;
  severity: 'error' | 'warning';
  message: string;
  line?: number;
  column?: number;
}

/**
 * The normalised manifest: the host's model as JSON (field names as in the manifest, defaults
 * filled in; the singular `agent` becomes `agents[0]` with id `default`).
 */
export interface Manifest {
  apiVersion: 'platform/v2';
  app_id: string;
  version: string;
  name: string;
  description?: string;
  runtime: { image: string; port: number; resources: { memory_mb: number; cpu_cores: number }; env: Record<string, string> };
  network: { egress_hosts: string[] };
  required_scopes: string[];
  required_integrations: string[];
  tools: { name: string; description: string; scopes_required: string[]; agent_visible: boolean }[];
  lifecycle: {
    on_install: boolean;
    on_uninstall: boolean;
    on_inbound: boolean;
    on_user_added: boolean;
    schedules: { name: string; cron: string }[];
  };
  agent_form: 'none' | 'singular' | 'plural';
  agents: {
    id: string;
    name: string;
    system_prompt: string;
    is_default: boolean;
    team: string[];
    [field: string]: unknown;
  }[];
  install_settings: { id: string; type: string; label: string; required: boolean; default?: Json; [field: string]: unknown }[];
  http_routes: { path: string; method: 'GET' | 'POST' | 'PUT' | 'DELETE' | 'PATCH'; public: boolean }[];
  emits: string[];
  subscribes_to: { emitter_app: string; event_name: string; target: { agent: string } | { heartbeat: { agent: string; slug: string } } }[];
  [field: string]: unknown;
}

/** Loads and strictly validates a manifest file; `ManifestError` with the findings otherwise. */
export function loadManifest(path: string | { readonly href: string }): Manifest;
/** Loads and strictly validates a manifest text (YAML; JSON when `file` ends in `.json`). */
export function loadManifestFromString(text: string, file?: string): Manifest;

/** A platform capability by its WIT name; a host that does not offer one answers decision `not_available` naming it. */
export type Capability =
  | 'tools.call'
  | 'rooms.post'
  | 'commitments.add'
  | 'team.delegate'
  | 'apps.invoke'
  | 'apps.fetch'
  | 'events.emit'
  | 'agent.ask';

/** Every capability's name. */
export const CAPABILITIES: readonly Capability[];

/** A tool call, room post or commitment that the platform refused or that failed. */
export class ToolCallError extends Error {
  constructor(fields: { toolName: string; decision: string; message: string; neededScopes?: string[] });
  readonly name: 'ToolCallError';
  /** The tool (or `rooms.post`, `commitments.add`). */
  toolName: string;
  /** `scope_denied`, `not_member`, `unknown_agent`, `invalid_arguments`, `unmocked`, `network_error`, `not_available`, ... */
  decision: string;
  /** The scopes the install lacks (for `scope_denied`). */
  neededScopes: string[];
  /** The capability this host does not offer, when the decision is `not_available`; else null. */
  readonly notAvailable: Capability | null;
  /** The WIT record. */
  toRecord(): { toolName: string; decision: string; message: string; neededScopes: string[] };
}

/** An agent call (delegation, cross-app invoke or fetch, emit, ask) that failed. */
export class AgentCallError extends Error {
  constructor(fields: { reason: string });
  readonly name: 'AgentCallError';
  /** `chain depth exceeded ...`, `cycle detected ...`, `team delegation denied ...`, `no grant`, ... */
  reason: string;
  /** The capability this host does not offer, when the reason is ``not_available: `<capability>` ...``; else null. */
  readonly notAvailable: Capability | null;
  toRecord(): { reason: string };
}

/** Thrown by a handler whose input does not match what it accepts: the `invalid-input` error (a 400 on a route). */
export class InvalidInputError extends Error {
  constructor(message: string);
  readonly name: 'InvalidInputError';
}

/** Thrown by a handler that fails for another reason: the `failed` error (a 500 on a route). Any other thrown value is reported as `failed` too. */
export class FailedError extends Error {
  constructor(message: string);
  readonly name: 'FailedError';
}

/** The registration rules; the Rust SDK's `RegistrationErrorKind`, plus `NotAsync`. */
export type RegistrationErrorKind =
  | 'LifecycleDisabled'
  | 'UnknownSchedule'
  | 'ScopeNotRequired'
  | 'DoubleRegistration'
  | 'UnknownTool'
  | 'UnknownEvent'
  | 'UnknownRoute'
  | 'NoAgent'
  | 'NotAsync';
export const RegistrationErrorKind: { readonly [K in RegistrationErrorKind]: K };

/** A registration broke a rule; the message names the handler and the manifest field. */
export class RegistrationError extends Error {
  constructor(kind: RegistrationErrorKind, message: string);
  readonly name: 'RegistrationError';
  kind: RegistrationErrorKind;
}

/** The manifest could not be loaded (does not parse, breaks the schema, cannot be read, not embedded). */
export class ManifestError extends Error {
  constructor(message: string, findings?: Finding[]);
  readonly name: 'ManifestError';
  /** Every finding (warnings included); empty when the file could not be read. */
  findings: Finding[];
  /** One line per error: `path: message [code] (line L, column C)`, else the message. */
  problems: string[];
}

/** A handler's failure as the test client reports it: the WIT `handler-error` case and payload. */
export class HandlerError extends Error {
  readonly name: 'HandlerError';
  tag: 'no-handler' | 'registration' | 'invalid-input' | 'tool' | 'agent' | 'failed';
  /** The message, or the `ToolCallError` (`tool`) / `AgentCallError` (`agent`). */
  val: string | ToolCallError | AgentCallError;
}

/** Header names and values. */
export type Headers = [string, string][] | Record<string, string>;
/** A body: text, bytes or nothing. */
export type Body = string | Uint8Array | ArrayBuffer | null;

/** An HTTP request to one of the app's routes. */
export class HttpRequest {
  constructor(fields: { method: string; path: string; query?: string | null; headers?: [string, string][]; body?: Body; params?: Record<string, string> });
  /** Upper-case method. */
  method: string;
  /** The path, without the query. */
  path: string;
  /** The query string without `?`, or null. */
  query: string | null;
  /** Header names (lower-case) and values. */
  headers: [string, string][];
  body: Uint8Array;
  /** The values of the route's `{placeholders}`. */
  params: Record<string, string>;
  param(name: string): string | null;
  header(name: string): string | null;
  /** A query parameter (not percent-decoded), or null. */
  queryParam(name: string): string | null;
  text(): string;
  /** The body as JSON; `InvalidInputError` (a 400 answer) when it is not JSON. */
  json(): any;
}

/** An HTTP response (of a route, of `ctx.apps.fetch`, of `ctx.http`). */
export class HttpResponse {
  constructor(status?: number, headers?: Headers, body?: Body);
  status: number;
  headers: [string, string][];
  body: Uint8Array;
  /** 200 (or `status`) with a JSON body and `content-type: application/json`. */
  static json(value: unknown, status?: number): HttpResponse;
  /** A `text/plain; charset=utf-8` response. */
  static text(status: number, text: string): HttpResponse;
  /** A response with a status and no body. */
  static status(status: number): HttpResponse;
  withHeader(name: string, value: string): this;
  header(name: string): string | null;
  text(): string;
  json(): any;
}

/** Matches a path against a route pattern: the `{placeholder}` values in order, or null. */
export function matchRoute(pattern: string, path: string): [string, string][] | null;

/** Whether `key` matches the secret key format `^[A-Z][A-Z0-9_]{0,63}$`. */
export function isSecretKey(key: string): boolean;

/** A message in a group room. */
export interface RoomMessage {
  id: string;
  roomId: string;
  tenantId: string;
  senderType: 'agent' | 'user' | 'system';
  /** `<app_id>:<agent_slug>` or `user:<user_id>`. */
  senderRef: string;
  senderDisplay: string;
  content: string;
  /** Canonical keys of the mentioned members. */
  mentions: string[];
  metadata: Record<string, Json>;
  createdAt: string;
}

/** The answer to `ctx.rooms.post`. */
export interface RoomPost {
  message: RoomMessage;
  routedTargets: string[];
}

/** The answer to `ctx.events.emit`. */
export interface EmitResult {
  /** How many approved wires carry the event; 0 means nobody is subscribed. */
  wireCount: number;
  dispatched: number;
  failures: number;
}

/** An event delivered to an `onEvent` handler. */
export interface AppEvent<P = any> {
  eventName: string;
  /** The app that emitted it; several emitters of one name share a handler. */
  emitterAppId: string;
  /** The payload, parsed. */
  payload: P;
  /** The agent of this app named by the subscription's `target_agent`, if any. */
  targetAgentSlug: string | null;
}

/** A message that reached the tenant on an inbound channel (`onInbound`). */
export interface InboundEnvelope {
  messageId: string;
  /** `email`, `whatsapp`, `webhook`, ... */
  channel: string;
  from: string;
  body: string;
  subject: string | null;
  receivedAt: string;
  attachmentIds: string[];
  metadata: Record<string, Json>;
}

/** A user who joined the tenant (`onUserAdded`). */
export interface UserAdded {
  userId: string;
  displayName: string;
  email: string | null;
}

/** An outbound request of `ctx.http.send`. */
export interface OutboundRequest {
  method?: string;
  url: string;
  headers?: Headers;
  body?: Body;
}

/** Severity of `ctx.logger`. */
export type LogLevel = 'trace' | 'debug' | 'info' | 'warn' | 'error';

/** The context of one call (`ctx`). */
export interface Ctx {
  readonly tenantId: string;
  readonly appId: string;
  readonly appVersion: string;
  readonly callId: string;
  /** How many agent hops led to this call (1 for a call from the platform). */
  readonly chainDepth: number;
  readonly visitedAgents: string[];
  /** Whether the call arrived on a public route (no tenant principal). */
  readonly isPublicRoute: boolean;
  /** The public URL of one of the app's public routes for this tenant; `FailedError` when none matches. */
  publicCallbackUrl(path: string): string;
  tools: {
    /** Calls a platform tool; rejects with `ToolCallError`. */
    call<T = any>(name: string, args?: Record<string, unknown>): Promise<T>;
  };
  secrets: {
    /** The secret's value, or null (not set, malformed key, platform unreachable). Never throws. */
    get(key: string): string | null;
  };
  config: {
    /** An install setting's value, or null when it is not filled in. */
    get<T = Json>(key: string): T | null;
    /** Every filled-in setting. */
    all(): Record<string, Json>;
  };
  rooms: {
    /** Posts to a room as agent `fromAgent`; rejects with `ToolCallError` (`not_member`, `unknown_room`, ...). */
    post(roomId: string, content: string, options: { fromAgent: string; metadata?: Record<string, unknown> }): Promise<RoomPost>;
  };
  team: {
    /** Delegates to agent `target` of this app; rejects with `AgentCallError`. */
    delegate(target: string, prompt: string, options: { fromAgent: string }): Promise<string>;
  };
  apps: {
    /** Invokes agent `agent` of app `app` (needs a grant); rejects with `AgentCallError`. */
    invoke(app: string, agent: string, prompt: string): Promise<string>;
    /** Calls an HTTP route of app `app` (needs a grant naming `__route__`); rejects with `AgentCallError`. */
    fetch(app: string, path: string, options?: { method?: string; body?: Body | Record<string, unknown> }): Promise<HttpResponse>;
    fetch(app: string, path: string, method: string, body?: Body): Promise<HttpResponse>;
  };
  events: {
    /** Emits event `name` (declared in `emits`); rejects with `AgentCallError`. */
    emit(name: string, payload?: unknown): Promise<EmitResult>;
  };
  agent: {
    /** Asks one of the app's agents (the default one without `agent`); rejects with `AgentCallError`. */
    ask(prompt: string, options?: { agent?: string }): Promise<string>;
  };
  commitments: {
    /** Records a commitment; `dueAt` ISO-8601 with an offset (or a Date). Resolves to its id; rejects with `ToolCallError`. */
    add(title: string, content: string, fromAgent: string, dueAt?: string | Date | null): Promise<string>;
  };
  logger: Record<LogLevel, (message: string) => void>;
  /** Outbound HTTP, only to the hosts in `network.egress_hosts`. Rejects with `FailedError`. */
  http: {
    send(request: OutboundRequest): Promise<HttpResponse>;
    get(url: string, options?: { headers?: Headers }): Promise<HttpResponse>;
  };
}
export const Ctx: { new (backend: unknown): Ctx };

/** A handler's promise: every handler is an `async` function (checked at registration). */
type Async<T> = Promise<T>;

export type ToolHandler<A = any, R = unknown> = (ctx: Ctx, args: A) => Async<R>;
/** A hook's result is ignored. */
export type HookHandler = (ctx: Ctx) => Async<unknown>;
export type InboundHandler = (ctx: Ctx, envelope: InboundEnvelope) => Async<unknown>;
export type UserAddedHandler = (ctx: Ctx, user: UserAdded) => Async<unknown>;
export type EventHandler<P = any, R = unknown> = (ctx: Ctx, event: AppEvent<P>) => Async<R>;
export type MessageHandler = (ctx: Ctx, agentSlug: string, message: RoomMessage) => Async<unknown>;
export type RouteHandler = (ctx: Ctx, request: HttpRequest) => Async<HttpResponse | { status: number; headers?: Headers; body?: Body }>;

/** Options of `app.tool`. */
export interface ToolOptions {
  /** Documentation only: the planner reads the manifest's description. */
  description?: string;
  /** Scopes the tool needs; a subset of the manifest's `required_scopes`. */
  scopesRequired?: string[];
}

/** What the app registered, as the host's health check reads it. */
export interface Registration {
  /** The manifest text as written. */
  manifest: string;
  tools: string[];
  lifecycle: ('on_install' | 'on_uninstall' | 'on_inbound' | 'on_user_added')[];
  schedules: string[];
  events: string[];
  roomMessages: boolean;
  /** `METHOD path`, in registration order. */
  routes: string[];
}

/** An app: its manifest and its handlers, each checked against the manifest when registered. */
export class App {
  constructor(validated: { text: string; manifest: Manifest });
  /**
   * An app for the manifest file (default `atrium.app.yaml`), strictly validated
   * (`ManifestError`). On Node.js a relative path is looked up from the working directory,
   * then from the calling module's directory up to its package root; in a component the
   * build's embedded copy is used.
   */
  static fromManifest(path?: string | { readonly href: string }): App;
  /** An app for a manifest text (validated like `loadManifestFromString`). */
  static fromManifestString(text: string, file?: string): App;
  /** Whether this code runs inside a component. */
  static readonly inComponent: boolean;
  /** The manifest text as written. */
  readonly manifestText: string;
  /** The normalised manifest. */
  readonly manifest: Manifest;
  /** Registers tool `name` (declared in `tools`). */
  tool<A = any, R = unknown>(name: string, handler: ToolHandler<A, R>): this;
  tool<A = any, R = unknown>(name: string, options: ToolOptions, handler: ToolHandler<A, R>): this;
  /** Needs `lifecycle.on_install: true`. */
  onInstall(handler: HookHandler): this;
  /** Needs `lifecycle.on_uninstall: true`. */
  onUninstall(handler: HookHandler): this;
  /** Needs `lifecycle.on_inbound: true`. */
  onInbound(handler: InboundHandler): this;
  /** Needs `lifecycle.on_user_added: true`. */
  onUserAdded(handler: UserAddedHandler): this;
  /** `name` must be in `lifecycle.schedules`. */
  onSchedule(name: string, handler: HookHandler): this;
  /** `name` must be an `event_name` of `subscribes_to`; one handler per name. */
  onEvent<P = any, R = unknown>(name: string, handler: EventHandler<P, R>): this;
  /** The manifest must declare an agent. */
  onMessage(handler: MessageHandler): this;
  /** The same method and path must be in `http_routes`. */
  route(method: string, path: string, handler: RouteHandler): this;
  /** What is registered (the health check's answer). */
  registration(): Registration;
}
