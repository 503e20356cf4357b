// Types of @atrium/sdk/testing.

import type { AgentCallError, App, Capability, Body, Ctx, Headers, HttpResponse, Json, LogLevel, Registration, RoomMessage, ToolCallError } from '../index.js';

export { HandlerError } from '../index.js';

/** A recorded room post. */
export interface RecordedPost {
  roomId: string;
  content: string;
  fromAgent: string;
  metadata: Record<string, Json> | null;
}

/** Records every `ctx.rooms.post` call. */
export class MockRooms {
  readonly posts: RecordedPost[];
}

/** A room message as the platform delivers it (posted by a test user), with overrides. */
export function roomMessage(roomId: string, content: string, overrides?: Partial<WireRoomMessage>): WireRoomMessage;
/** A room message on the wire (`metadata` as JSON text or an object). */
export type WireRoomMessage = Omit<RoomMessage, 'metadata'> & { metadata: string | Record<string, Json> };

/** An inbound envelope (an e-mail) with overrides. */
export function inboundEnvelope(overrides?: Partial<TestEnvelope>): TestEnvelope;
export interface TestEnvelope {
  messageId: string;
  channel: string;
  from: string;
  body: string;
  subject: string | null;
  receivedAt: string;
  attachmentIds: string[];
  metadata: string | Record<string, Json>;
}

/** One tool of a mock file. */
export interface MockFileTool {
  name: string;
  scopes: string[];
  result?: Json;
  error?: { toolName: string; decision: string; message: string; neededScopes: string[] };
}
/** Parses the developer tool's mock file (`atrium.dev.json`). */
export function parseMockFile(text: string | object): MockFileTool[];

/** An answer of a mocked team, app or agent: a reply, a function of the prompt, or a failure. */
export type AgentAnswer = string | ((prompt: string) => string | AgentCallError) | AgentCallError;
/** A mocked HTTP answer. */
export type MockResponse = { status?: number; headers?: Headers; body?: Body | object } | HttpResponse;

/** Runs an app's handlers on Node.js against mocks that follow the platform's rules. */
export class TestClient {
  constructor(app: App, options?: { tenantId?: string; chainDepth?: number; visitedAgents?: string[]; publicRoute?: boolean });
  readonly app: App;
  /** The room posts the app made. */
  readonly rooms: MockRooms;
  withTenant(tenantId: string): this;
  withChain(depth: number, visitedAgents?: string[]): this;
  asPublicRoute(on?: boolean): this;
  /** Answers each capability with decision `not_available`, as a host that does not offer it, after the sandbox rules. */
  without(...capabilities: (Capability | Capability[])[]): this;
  /** Grants scopes to the install. */
  grant(...scopes: (string | string[])[]): this;
  /** Mocks a platform tool; with `scopes` the call needs them granted (`scope_denied` otherwise). Not mocked: `unmocked`. */
  mockTool(name: string, result: unknown, options?: { scopes?: string[] }): this;
  /** Mocks a platform tool that fails. */
  mockToolError(name: string, error: ToolCallError | { decision: string; message?: string; neededScopes?: string[] }, options?: { scopes?: string[] }): this;
  /** Loads the developer tool's mock file (its text or the parsed object). */
  mockFile(text: string | object): this;
  mockSecret(key: string, value: string): this;
  /** Makes the secrets API unreachable (`ctx.secrets.get` answers null). */
  secretsUnreachable(on?: boolean): this;
  /** Fills in an install setting. */
  setting(key: string, value: unknown): this;
  /** Answers outbound requests to `url` (the host must be in `network.egress_hosts`). */
  mockHttp(url: string, response: MockResponse | ((request: { method: string; url: string; headers: [string, string][]; body: Uint8Array }) => MockResponse)): this;
  answerTeam(target: string, answer: AgentAnswer): this;
  answerApp(app: string, agent: string, answer: AgentAnswer): this;
  answerFetch(app: string, path: string, answer: MockResponse | AgentCallError | ((request: { method: string; path: string; body: Uint8Array | null }) => MockResponse)): this;
  answerAgent(slug: string, answer: AgentAnswer): this;
  /** How many approved wires carry event `name` (`wireCount`, default 0). */
  wire(name: string, count: number): this;
  /** A fresh context over the mocks. */
  ctx(): Ctx;
  readonly toolCalls: [string, Record<string, Json>][];
  readonly emitted: [string, Json][];
  readonly logs: [LogLevel, string][];
  readonly agentCalls: string[];
  readonly commitments: [string, string, string, string | null][];
  readonly httpRequests: { method: string; url: string; headers: [string, string][]; body: Uint8Array }[];
  registration(): Registration;
  /** Calls a tool; rejects with `HandlerError`. */
  callTool<R = any>(name: string, args?: Record<string, unknown>): Promise<R>;
  install(): Promise<void>;
  uninstall(): Promise<void>;
  inbound(envelope: Partial<TestEnvelope>): Promise<void>;
  userAdded(user: { userId: string; displayName: string; email?: string | null }): Promise<void>;
  schedule(name: string): Promise<void>;
  roomMessage(agent: string, message: WireRoomMessage): Promise<void>;
  /**
   * Delivers an event; without `emitterAppId` the first subscribed emitter of that name.
   * `targetAgentSlug` is the `target_agent` of that emitter's subscription.
   */
  simulateEvent<R = any>(eventName: string, payload?: unknown, options?: { emitterAppId?: string }): Promise<R>;
  /** Serves a request on the app's routes (never rejects). */
  request(method: string, path: string, options?: { body?: Body | object; headers?: Headers }): Promise<HttpResponse>;
}
