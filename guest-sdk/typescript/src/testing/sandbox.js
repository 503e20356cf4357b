// The host's sandbox rules for the test backend: what the host checks on every call an app
// makes into the platform, outbound HTTP's egress hosts included, run by the host's own code
// (`atrium_manifest::sandbox`, exported by the validator module as `atrium_sandbox`), so that a
// test fails exactly where the real host would refuse, with the same decision and the same
// words. Never a second implementation.

import { AgentCallError, ToolCallError } from '../errors.js';
import { sandboxCheck } from '../validator.js';

/** A refusal the host words as a sentence (a callback path, a secret key). */
export class SandboxRefusal extends Error {
  constructor(sentence) {
    super(sentence);
    this.name = 'SandboxRefusal';
  }
}

/** The checks for one app's manifest (its text, as the app embeds it). */
export function sandboxFor(manifestText) {
  const run = (chain, publicRoute, check) => {
    const outcome = sandboxCheck({
      manifest: manifestText,
      chain: chain ? { depth: chain.depth, visited: chain.visited } : undefined,
      public_route: publicRoute === true,
      check,
    });
    if ('ok' in outcome) return outcome.ok;
    if (outcome.tool_refusal) {
      const r = outcome.tool_refusal;
      throw new ToolCallError({ toolName: r.tool_name, decision: r.decision, message: r.message, neededScopes: r.needed_scopes });
    }
    if (outcome.agent_refusal) throw new AgentCallError({ reason: outcome.agent_refusal.reason });
    if (outcome.refusal !== undefined) throw new SandboxRefusal(outcome.refusal);
    const why = outcome.error ?? JSON.stringify(outcome);
    // A module built before a check kind existed does not know its name.
    const stale = /unknown variant/.test(why) ? ' (the validator module is older than this SDK: rebuild guest-sdk/manifest-wasm)' : '';
    throw new Error(`the sandbox checks failed: ${why}${stale}`);
  };
  return {
    /** `tools.call`: the arguments object (they must be a JSON object). */
    toolArguments: (tool, args) => run(null, false, { kind: 'tool_arguments', tool, args }),
    /** `tools.call`: the install holds every scope the tool needs. */
    toolScopes: (tool, needs, granted) => run(null, false, { kind: 'tool_scopes', tool, needs, granted }),
    /** `rooms.post`: `{sender_ref, sender_display, metadata}`; the install holds `rooms.write`. */
    roomPost: (fromAgent, content, metadata, granted) =>
      run(null, false, { kind: 'room_post', from_agent: fromAgent, content, metadata: metadata ?? undefined, granted }),
    /** `commitments.add`. */
    commitment: (title, content, fromAgent, dueAt) =>
      run(null, false, { kind: 'commitment', title, content, from_agent: fromAgent, due_at: dueAt ?? undefined }),
    /** `team.delegate`. */
    delegate: (chain, publicRoute, target, fromAgent) => run(chain, publicRoute, { kind: 'delegate', target, from_agent: fromAgent }),
    /** `apps.invoke`. */
    invoke: (chain, publicRoute, app, agent) => run(chain, publicRoute, { kind: 'invoke', app, agent }),
    /** `apps.fetch`: `{method, chain}`. */
    fetch: (chain, path, method) => run(chain, false, { kind: 'fetch', path, method }),
    /** `events.emit`: `{payload, chain}`. */
    emit: (chain, publicRoute, name, payload) => run(chain, publicRoute, { kind: 'emit', name, payload }),
    /** `agent.ask`: `{agent, chain}` (the default agent without one). */
    ask: (chain, agent) => run(chain, false, { kind: 'ask', agent: agent ?? undefined }),
    /** `context.public-callback-url`: throws the refusal's sentence. */
    publicCallbackPath: (path) => run(null, false, { kind: 'public_callback_path', path }),
    /** `secrets.get`: the key's format; a `SandboxRefusal` is the warning the host logs. */
    secretKey: (key) => run(null, false, { kind: 'secret_key', key }),
    /** Outbound HTTP: whether `network.egress_hosts` allows `host` (the host's `EgressPolicy`). */
    egress: (host) => run(null, false, { kind: 'egress', host }) === true,
    /** Throws what a host that does not offer `capability` answers (decision `not_available`). */
    notAvailable: (capability) => run(null, false, { kind: 'not_available', capability }),
    /** The canonical keys a room message mentions. */
    extractMentions: (content) => run(null, false, { kind: 'extract_mentions', content }),
  };
}

/**
 * The entries of the developer tool's mock file, parsed by the host's own parser (the one of
 * `atrium call` and `atrium dev`): `{name, scopes, result}` or `{name, scopes, error}`. Throws
 * the parser's words, which name the entry, for a malformed file.
 */
export function mockFileEntries(text) {
  const outcome = sandboxCheck({ check: { kind: 'mock_file', text } });
  if ('ok' in outcome) return outcome.ok;
  if (outcome.refusal !== undefined) throw new Error(outcome.refusal);
  throw new Error(`the sandbox checks failed: ${outcome.error ?? JSON.stringify(outcome)}`);
}
