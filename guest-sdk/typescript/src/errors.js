// The errors an app sees and throws (docs/sdk.md, "Errors").
//
// `ToolCallError` and `AgentCallError` come from the platform (a refused or failed tool call,
// room post or commitment; a refused or failed agent call). `InvalidInputError` and
// `FailedError` are what a handler throws for the `invalid-input` and `failed` cases of the WIT
// `handler-error`; anything else a handler throws is reported as `failed` with its message.
// `RegistrationError` and `ManifestError` come from the SDK itself.

/**
 * The platform capabilities by their WIT names; a host that does not offer one answers
 * decision `not_available` naming it (docs/wit.md).
 */
export const CAPABILITIES = Object.freeze([
  'tools.call',
  'rooms.post',
  'commitments.add',
  'team.delegate',
  'apps.invoke',
  'apps.fetch',
  'events.emit',
  'agent.ask',
]);

/** A tool call, room post or commitment that the platform refused or that failed. */
export class ToolCallError extends Error {
  constructor({ toolName, decision, message, neededScopes = [] }) {
    super(message);
    this.name = 'ToolCallError';
    /** The tool (or `rooms.post`, `commitments.add`) that failed. */
    this.toolName = toolName;
    /** What the platform decided: `scope_denied`, `not_member`, `unmocked`, ... */
    this.decision = decision;
    /** The scopes the install lacks (for `scope_denied`). */
    this.neededScopes = [...neededScopes];
  }

  /**
   * The capability this host does not offer (`rooms.post`, `commitments.add`, `tools.call`)
   * when the decision is `not_available`, else null: an app can fall back instead of failing.
   */
  get notAvailable() {
    return this.decision === 'not_available' ? this.toolName : null;
  }

  toString() {
    let text = `tool call \`${this.toolName}\` failed (${this.decision}): ${this.message}`;
    if (this.neededScopes.length > 0) {
      text += ` [needed scopes: ${this.neededScopes.join(', ')}]`;
    }
    return text;
  }

  /** The WIT record `tool-call-error`. */
  toRecord() {
    return {
      toolName: this.toolName,
      decision: this.decision,
      message: this.message,
      neededScopes: [...this.neededScopes],
    };
  }
}

/** An agent call (delegation, cross-app invoke or fetch, emit, ask) that failed. */
export class AgentCallError extends Error {
  constructor({ reason }) {
    super(reason);
    this.name = 'AgentCallError';
    /** The cause: `chain depth exceeded ...`, `cycle detected ...`, `no grant`, ... */
    this.reason = reason;
  }

  /**
   * The capability this host does not offer (`agent.ask`, `team.delegate`, `apps.invoke`,
   * `apps.fetch`, `events.emit`) when the reason is ``not_available: `<capability>` ...``,
   * else null.
   */
  get notAvailable() {
    const match = /^not_available: `([^`]+)`/.exec(this.reason);
    return match && CAPABILITIES.includes(match[1]) ? match[1] : null;
  }

  toString() {
    return `agent call failed: ${this.reason}`;
  }

  /** The WIT record `agent-call-error`. */
  toRecord() {
    return { reason: this.reason };
  }
}

/** Thrown by a handler whose input does not match what it accepts (`invalid-input`). */
export class InvalidInputError extends Error {
  constructor(message) {
    super(message);
    this.name = 'InvalidInputError';
  }

  toString() {
    return `invalid input: ${this.message}`;
  }
}

/** Thrown by a handler that fails for any other reason (`failed`). */
export class FailedError extends Error {
  constructor(message) {
    super(message);
    this.name = 'FailedError';
  }

  toString() {
    return this.message;
  }
}

/** The registration rules (docs/sdk.md), named as the Rust SDK's `RegistrationErrorKind`. */
export const RegistrationErrorKind = Object.freeze({
  /** A lifecycle handler whose flag in `lifecycle` is not true. */
  LifecycleDisabled: 'LifecycleDisabled',
  /** A schedule handler whose name is not in `lifecycle.schedules`. */
  UnknownSchedule: 'UnknownSchedule',
  /** `scopesRequired` outside the manifest's `required_scopes`. */
  ScopeNotRequired: 'ScopeNotRequired',
  /** A second handler for the same tool, hook, schedule, event or route. */
  DoubleRegistration: 'DoubleRegistration',
  /** A tool handler for a tool the manifest does not declare. */
  UnknownTool: 'UnknownTool',
  /** An event handler for an event the manifest does not subscribe to. */
  UnknownEvent: 'UnknownEvent',
  /** A route handler for a route the manifest does not declare. */
  UnknownRoute: 'UnknownRoute',
  /** A room handler in an app that declares no agent. */
  NoAgent: 'NoAgent',
  /** A handler that is not an async function (TypeScript handlers must return a promise). */
  NotAsync: 'NotAsync',
});

/** A registration broke a rule of docs/sdk.md; `kind` names the rule. */
export class RegistrationError extends Error {
  constructor(kind, message) {
    super(message);
    this.name = 'RegistrationError';
    this.kind = kind;
  }

  toString() {
    return this.message;
  }
}

/**
 * The manifest could not be loaded: it does not parse, breaks the schema, cannot be read, or
 * (inside a component) was not embedded by the build.
 */
export class ManifestError extends Error {
  constructor(message, findings = []) {
    super(message);
    this.name = 'ManifestError';
    /** Every finding, as `atrium lint --json` prints them (warnings included). */
    this.findings = findings;
    const errors = findings.filter((f) => f.severity !== 'warning');
    /** One line per error: `path: message [code] (line L, column C)`; else the message. */
    this.problems = errors.length > 0 ? errors.map(problemText) : [message];
  }

  /** The error for a manifest the validator refused. */
  static fromFindings(findings) {
    const errors = findings.filter((f) => f.severity !== 'warning').map(problemText);
    return new ManifestError(`invalid manifest: ${errors.join('; ')}`, findings);
  }
}

/** A finding as the Rust `Problem` displays it. */
function problemText(f) {
  let text = `${f.path ? f.path : '(manifest)'}: ${f.message} [${f.code}]`;
  if (f.line != null) {
    text += ` (line ${f.line}`;
    if (f.column != null) text += `, column ${f.column}`;
    text += ')';
  }
  return text;
}

/**
 * What a handler's failure is on the WIT side: a `handler-error` variant, `{tag, val}`.
 * Never throws: anything thrown becomes `failed` with its message.
 */
export function toHandlerError(error) {
  if (error instanceof NoHandlerError) return { tag: 'no-handler', val: error.message };
  if (error instanceof InvalidInputError) return { tag: 'invalid-input', val: error.message };
  if (error instanceof ToolCallError) return { tag: 'tool', val: error.toRecord() };
  if (error instanceof AgentCallError) return { tag: 'agent', val: error.toRecord() };
  if (error instanceof RegistrationError || error instanceof EntryError) {
    return { tag: 'registration', val: error.message };
  }
  if (error instanceof FailedError) return { tag: 'failed', val: error.message };
  return { tag: 'failed', val: messageOf(error) };
}

/** A readable message for anything thrown: the error's display, else its string form. */
export function messageOf(error) {
  try {
    if (error instanceof ToolCallError || error instanceof AgentCallError || error instanceof InvalidInputError) {
      return error.toString();
    }
    if (error instanceof Error) {
      return error.message ? error.message : String(error);
    }
    if (typeof error === 'string') return error;
    return `a handler threw ${JSON.stringify(error) ?? String(error)}`;
  } catch {
    return 'a handler threw a value that cannot be shown';
  }
}

/**
 * A handler's failure as the test client reports it: the WIT `handler-error`, with `tag` the
 * case (`no-handler`, `registration`, `invalid-input`, `tool`, `agent`, `failed`) and `val`
 * its payload (a message, or the `ToolCallError` / `AgentCallError`).
 */
export class HandlerError extends Error {
  constructor({ tag, val }) {
    const payload =
      tag === 'tool' ? new ToolCallError(val) : tag === 'agent' ? new AgentCallError(val) : val;
    super(`${tag}: ${typeof payload === 'string' ? payload : payload.toString()}`);
    this.name = 'HandlerError';
    this.tag = tag;
    this.val = payload;
  }
}

/** No handler is registered for what the platform called (`no-handler`). Internal. */
export class NoHandlerError extends Error {
  constructor(what) {
    super(what);
    this.name = 'NoHandlerError';
  }
}

/**
 * The app's entry module failed or made no App (reported as `registration`, like a broken
 * registration: the app cannot serve calls). Internal.
 */
export class EntryError extends Error {
  constructor(message) {
    super(message);
    this.name = 'EntryError';
  }
}
