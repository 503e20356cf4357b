// Requests and responses of the app's HTTP routes, and the route matching of the host
// (`atrium_manifest::match_route`): `{name}` placeholders, also inside a segment
// (`invoice-{id}.pdf`), a trailing slash ignored.

import { InvalidInputError } from './errors.js';
import { jsonText } from './json.js';

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Bytes of a body given as text, bytes or nothing. */
export function toBytes(body) {
  if (body == null) return new Uint8Array(0);
  if (typeof body === 'string') return encoder.encode(body);
  if (body instanceof Uint8Array) return body;
  if (body instanceof ArrayBuffer) return new Uint8Array(body);
  if (ArrayBuffer.isView(body)) return new Uint8Array(body.buffer, body.byteOffset, body.byteLength);
  throw new TypeError('a body is a string, a Uint8Array, an ArrayBuffer or null');
}

/** An HTTP request to one of the app's routes. */
export class HttpRequest {
  constructor({ method, path, query = null, headers = [], body = new Uint8Array(0), params = {} }) {
    /** Upper-case method. */
    this.method = method.toUpperCase();
    /** The path, without the query. */
    this.path = path;
    /** The query string without `?`, or null. */
    this.query = query;
    /** Header names (lower-case) and values, in order. */
    this.headers = headers.map(([k, v]) => [k.toLowerCase(), v]);
    /** The body. */
    this.body = toBytes(body);
    /** The values of the route's `{placeholders}`. */
    this.params = { ...params };
  }

  /** The value of placeholder `name`, or null. */
  param(name) {
    return Object.hasOwn(this.params, name) ? this.params[name] : null;
  }

  /** The first value of header `name` (case-insensitive), or null. */
  header(name) {
    const lower = name.toLowerCase();
    const found = this.headers.find(([k]) => k === lower);
    return found ? found[1] : null;
  }

  /** The value of query parameter `name` (not percent-decoded), or null. */
  queryParam(name) {
    if (this.query == null) return null;
    for (const pair of this.query.split('&')) {
      const at = pair.indexOf('=');
      if (at >= 0 && pair.slice(0, at) === name) return pair.slice(at + 1);
    }
    return null;
  }

  /** The body as UTF-8 text. */
  text() {
    return decoder.decode(this.body);
  }

  /** The body parsed as JSON; `InvalidInputError` (a 400 answer) when it is not JSON. */
  json() {
    try {
      return JSON.parse(this.text());
    } catch (e) {
      throw new InvalidInputError(`the body is not the expected JSON: ${e.message}`);
    }
  }
}

/** An HTTP response from one of the app's routes. */
export class HttpResponse {
  constructor(status = 200, headers = [], body = null) {
    /** The status code. */
    this.status = status;
    /** Header names and values. */
    this.headers = Array.isArray(headers) ? headers.map(([k, v]) => [k, String(v)]) : Object.entries(headers).map(([k, v]) => [k, String(v)]);
    /** The body. */
    this.body = toBytes(body);
  }

  /** A response with a JSON body (status 200 unless given); a 500 when `value` is not JSON. */
  static json(value, status = 200) {
    let text;
    try {
      text = jsonText(value ?? null, (why) => new TypeError(why));
    } catch (e) {
      return HttpResponse.text(500, `the response does not serialize: ${e.message}`);
    }
    return new HttpResponse(status, [['content-type', 'application/json']], text);
  }

  /** A plain-text response. */
  static text(status, text) {
    return new HttpResponse(status, [['content-type', 'text/plain; charset=utf-8']], text);
  }

  /** A response with a status and no body. */
  static status(status) {
    return new HttpResponse(status);
  }

  /** This response with one more header. */
  withHeader(name, value) {
    this.headers.push([name, String(value)]);
    return this;
  }

  /** The first value of header `name` (case-insensitive), or null. */
  header(name) {
    const lower = name.toLowerCase();
    const found = this.headers.find(([k]) => k.toLowerCase() === lower);
    return found ? found[1] : null;
  }

  /** The body as UTF-8 text. */
  text() {
    return decoder.decode(this.body);
  }

  /** The body parsed as JSON. */
  json() {
    return JSON.parse(this.text());
  }
}

/**
 * What a route handler returned, as an `HttpResponse`: an `HttpResponse`, or a plain
 * `{status, headers, body}` object.
 */
export function asResponse(value) {
  if (value instanceof HttpResponse) return value;
  if (value !== null && typeof value === 'object' && Number.isInteger(value.status)) {
    return new HttpResponse(value.status, value.headers ?? [], value.body ?? null);
  }
  throw new TypeError(
    'a route handler must resolve to an HttpResponse (HttpResponse.json, HttpResponse.text) or {status, headers, body}',
  );
}

/**
 * Matches `path` against a route pattern; answers the placeholder values in order as
 * `[name, value]` pairs, or null when the path does not match.
 */
export function matchRoute(pattern, path) {
  const bare = path.split(/[?#]/)[0];
  const trim = (p) => {
    let t = p.startsWith('/') ? p.slice(1) : p;
    if (t.endsWith('/')) t = t.slice(0, -1);
    return t;
  };
  const patternSegments = trim(pattern).split('/');
  const pathSegments = trim(bare).split('/');
  if (patternSegments.length !== pathSegments.length) return null;
  const params = [];
  for (let i = 0; i < patternSegments.length; i++) {
    const found = matchSegment(patternSegments[i], pathSegments[i]);
    if (found === null) return null;
    params.push(...found);
  }
  return params;
}

function matchSegment(pattern, segment) {
  const pieces = [];
  let rest = pattern;
  for (;;) {
    const open = rest.indexOf('{');
    if (open < 0) break;
    const close = rest.indexOf('}', open);
    if (close < 0) return null;
    if (open > 0) pieces.push({ literal: rest.slice(0, open) });
    pieces.push({ param: rest.slice(open + 1, close) });
    rest = rest.slice(close + 1);
  }
  if (rest.length > 0) pieces.push({ literal: rest });
  // Request paths are untrusted: bound the backtracking (as the host does, in bytes).
  if (encoder.encode(segment).length > 1024) return null;
  return matchPieces(pieces, 0, segment);
}

function matchPieces(pieces, index, segment) {
  if (index === pieces.length) return segment.length === 0 ? [] : null;
  const piece = pieces[index];
  if (piece.literal !== undefined) {
    if (!segment.startsWith(piece.literal)) return null;
    return matchPieces(pieces, index + 1, segment.slice(piece.literal.length));
  }
  // A placeholder takes at least one character; the shortest that lets the rest match wins.
  const ends = [];
  for (let i = 1; i <= segment.length; i++) {
    // Split on code point boundaries only.
    const code = segment.charCodeAt(i - 1);
    if (code >= 0xd800 && code <= 0xdbff && i < segment.length) continue;
    ends.push(i);
  }
  for (const end of ends) {
    const found = matchPieces(pieces, index + 1, segment.slice(end));
    if (found !== null) return [[piece.param, segment.slice(0, end)], ...found];
  }
  return null;
}
