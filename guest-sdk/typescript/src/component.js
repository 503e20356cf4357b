// The component side, used only in the bundle that atrium-sdk-build makes: the platform
// through the component's imports (`atrium:app/*@0.1.0`), and the exports `handlers` and
// `incomingHandler` (wasi:http/incoming-handler over wasi:http/types@0.2.12, written by hand).
//
// componentize-js wraps every export in an async function and drives its promise to
// completion inside the call (StarlingMonkey's event loop runs until the export's promise
// settles). A rejected promise or a thrown `Error` would trap the call, so every export here
// answers a WIT `result` value and never throws.

import { current, publicCallbackUrl } from 'atrium:app/context@0.1.0';
import { call } from 'atrium:app/tools@0.1.0';
import { get as secretGet } from 'atrium:app/secrets@0.1.0';
import { get as configGet, all as configAll } from 'atrium:app/config@0.1.0';
import { post } from 'atrium:app/rooms@0.1.0';
import { delegate } from 'atrium:app/team@0.1.0';
import { invoke, fetch as appsFetch } from 'atrium:app/apps@0.1.0';
import { emit } from 'atrium:app/events@0.1.0';
import { ask } from 'atrium:app/agent@0.1.0';
import { add } from 'atrium:app/commitments@0.1.0';
import { log } from 'atrium:app/logging@0.1.0';
import { Fields, OutgoingBody, OutgoingResponse, ResponseOutparam } from 'wasi:http/types@0.2.12';

import { App, createdApps } from './app.js';
import { Ctx } from './ctx.js';
import { handlersFor } from './dispatch.js';
import { AgentCallError, EntryError, FailedError, RegistrationError, ToolCallError, messageOf } from './errors.js';
import { HttpRequest, HttpResponse } from './http.js';

/** Largest request body a route reads; a larger one gets 413. */
export const MAX_REQUEST_BODY = 1024 * 1024;

const dispose = Symbol.dispose || Symbol.for('dispose');
const decoder = new TextDecoder();
const encoder = new TextEncoder();

function payloadOf(error) {
  return error !== null && typeof error === 'object' && 'payload' in error ? error.payload : undefined;
}

function asToolError(error) {
  const p = payloadOf(error);
  if (p && typeof p === 'object' && 'decision' in p) return new ToolCallError(p);
  return error;
}

function asAgentError(error) {
  const p = payloadOf(error);
  if (p && typeof p === 'object' && 'reason' in p) return new AgentCallError(p);
  return error;
}

function guard(convert, run) {
  try {
    return run();
  } catch (e) {
    throw convert(e);
  }
}

/** The platform through the component's imports. */
export const importsBackend = {
  callInfo: () => current(),
  publicCallbackUrl: (path) =>
    guard((e) => new FailedError(typeof payloadOf(e) === 'string' ? payloadOf(e) : messageOf(e)), () => publicCallbackUrl(path)),
  callTool: (name, args) => guard(asToolError, () => call(name, args)),
  secret: (key) => secretGet(key) ?? null,
  configGet: (key) => configGet(key) ?? null,
  configAll: () => configAll(),
  roomPost: (roomId, content, fromAgent, metadata) => guard(asToolError, () => post(roomId, content, fromAgent, metadata ?? undefined)),
  delegate: (target, prompt, fromAgent) => guard(asAgentError, () => delegate(target, prompt, fromAgent)),
  invoke: (app, agent, prompt) => guard(asAgentError, () => invoke(app, agent, prompt)),
  fetch: (app, path, method, body) => guard(asAgentError, () => appsFetch(app, path, method, body ?? undefined)),
  emit: (name, payload) => guard(asAgentError, () => emit(name, payload)),
  ask: (prompt, agent) => guard(asAgentError, () => ask(prompt, agent ?? undefined)),
  addCommitment: (title, content, fromAgent, dueAt) => guard(asToolError, () => add(title, content, fromAgent, dueAt ?? undefined)),
  log: (level, message) => log(level, message),
  /** Outbound HTTP through the engine's `fetch` (wasi:http/outgoing-handler); the host checks the egress hosts. */
  async httpSend(request) {
    const response = await fetch(request.url, {
      method: request.method,
      headers: request.headers,
      body: request.body.length > 0 ? request.body : undefined,
    });
    const body = new Uint8Array(await response.arrayBuffer());
    return { status: response.status, headers: [...response.headers.entries()], body };
  },
};

/**
 * The app the entry module exports: its `default` or `app` export, else the one App it made.
 * A module that failed while registering leaves its error, reported on every call.
 */
export function resolveApp(entry, failure) {
  if (failure !== undefined) {
    if (failure instanceof RegistrationError) return () => { throw failure; };
    const error = new EntryError(`the app's entry module failed while registering: ${messageOf(failure)}`);
    return () => { throw error; };
  }
  const candidates = [entry?.default, entry?.app].filter((a) => a instanceof App);
  const app = candidates[0] ?? (createdApps.length === 1 ? createdApps[0] : undefined);
  if (!app) {
    const error = new EntryError(
      createdApps.length === 0
        ? 'the entry module made no App: call App.fromManifest("atrium.app.yaml") and export it (export default app)'
        : `the entry module made ${createdApps.length} Apps and exports none of them: export the one to serve (export default app)`,
    );
    return () => { throw error; };
  }
  return () => app;
}

function methodName(method) {
  return method.tag === 'other' ? method.val : method.tag.toUpperCase();
}

/** The request as a route sees it, or the response that refuses it (413, 400). */
function readRequest(incoming) {
  const target = incoming.pathWithQuery() ?? '/';
  const at = target.indexOf('?');
  const path = at >= 0 ? target.slice(0, at) : target;
  const query = at >= 0 ? target.slice(at + 1) : null;
  const headerFields = incoming.headers();
  const headers = headerFields.entries().map(([name, value]) => [name, decoder.decode(value)]);
  headerFields[dispose]?.();
  const chunks = [];
  let size = 0;
  let body;
  try {
    body = incoming.consume();
  } catch {
    body = undefined;
  }
  if (body) {
    const stream = body.stream();
    try {
      for (;;) {
        let chunk;
        try {
          chunk = stream.blockingRead(65536n);
        } catch (e) {
          if (payloadOf(e)?.tag === 'closed') break;
          return HttpResponse.text(400, 'the request body could not be read');
        }
        size += chunk.length;
        if (size > MAX_REQUEST_BODY) return HttpResponse.text(413, 'the request body is larger than 1 MiB');
        chunks.push(chunk);
      }
    } finally {
      stream[dispose]?.();
      body[dispose]?.();
    }
  }
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.length;
  }
  return new HttpRequest({ method: methodName(incoming.method()), path, query, headers, body: bytes });
}

function writeResponse(response, responseOut) {
  const entries = response.headers.map(([k, v]) => [k.toLowerCase(), encoder.encode(v)]);
  let headers;
  try {
    headers = Fields.fromList(entries);
  } catch {
    headers = new Fields();
  }
  const outgoing = new OutgoingResponse(headers);
  try {
    outgoing.setStatusCode(response.status);
  } catch {
    outgoing.setStatusCode(500);
  }
  const body = outgoing.body();
  ResponseOutparam.set(responseOut, { tag: 'ok', val: outgoing });
  const stream = body.write();
  const bytes = response.body;
  for (let at = 0; at < bytes.length; at += 4096) {
    stream.blockingWriteAndFlush(bytes.subarray(at, Math.min(at + 4096, bytes.length)));
  }
  stream[dispose]();
  OutgoingBody.finish(body, undefined);
}

/** The exports of a component serving the app that `entry` (the app's module) made. */
export function exportApp(entry, failure) {
  const getApp = resolveApp(entry, failure);
  const handlers = handlersFor(getApp, importsBackend);
  const incomingHandler = {
    async handle(request, responseOut) {
      let response;
      try {
        const read = readRequest(request);
        if (read instanceof HttpResponse) {
          response = read;
        } else {
          let app;
          try {
            app = getApp();
          } catch (e) {
            app = null;
            response = HttpResponse.text(500, messageOf(e));
          }
          if (app) response = await app.serve(new Ctx(importsBackend), read);
        }
      } catch (e) {
        response = HttpResponse.text(500, messageOf(e));
      }
      try {
        writeResponse(response, responseOut);
      } catch (e) {
        log('error', `the response could not be written: ${messageOf(e)}`);
      }
    },
  };
  return { handlers, incomingHandler };
}
