// The manifest validator module (`guest-sdk/manifest-wasm`): `atrium lint`'s own validator
// compiled to WebAssembly with no imports, run with Node's built-in `WebAssembly`. Never a
// second implementation: the SDK, `atrium lint` and the registry cannot disagree.
//
// ABI: `atrium_alloc(len) -> ptr`; the UTF-8 JSON request `{"file", "text"}` written at ptr;
// `atrium_check(ptr, len) -> u64` = `(answer_ptr << 32) | answer_len`; the answer JSON
// `{"valid", "manifest", "findings"}` read there; `atrium_free(answer_ptr, answer_len)`.
// `atrium_sandbox(ptr, len) -> u64` answers the host's sandbox rules the same way, for the
// test client (guest-sdk/manifest-wasm/src/sandbox.rs).

import { existsSync, readFileSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

import { ManifestError } from './errors.js';

/** The variable naming the validator module. */
export const VALIDATOR_ENV = 'ATRIUM_MANIFEST_VALIDATOR';

/** Where a published package carries the module. */
export const SHIPPED_VALIDATOR = fileURLToPath(new URL('../validator.wasm', import.meta.url));

const instances = new Map();

/**
 * The validator module's path: `ATRIUM_MANIFEST_VALIDATOR`, else `validator.wasm` in the
 * package directory. `ManifestError` when neither exists.
 */
export function validatorPath() {
  const named = process.env[VALIDATOR_ENV];
  if (named) {
    if (!existsSync(named) || !statSync(named).isFile()) {
      throw new ManifestError(`${VALIDATOR_ENV} names ${named}, which is not a file`);
    }
    return named;
  }
  if (existsSync(SHIPPED_VALIDATOR)) return SHIPPED_VALIDATOR;
  throw new ManifestError(
    `the manifest validator module is not available: set ${VALIDATOR_ENV} to the path of ` +
      `atrium_manifest_wasm.wasm (built from guest-sdk/manifest-wasm), or ship it as ` +
      `${SHIPPED_VALIDATOR} (neither exists)`,
  );
}

function instance(path) {
  let found = instances.get(path);
  if (!found) {
    let module;
    try {
      module = new WebAssembly.Module(readFileSync(path));
    } catch (e) {
      throw new ManifestError(`the manifest validator module ${path} cannot be loaded: ${e.message}`);
    }
    if (WebAssembly.Module.imports(module).length !== 0) {
      throw new ManifestError(`${path} is not the manifest validator module: it has imports`);
    }
    found = new WebAssembly.Instance(module, {}).exports;
    for (const name of ['memory', 'atrium_alloc', 'atrium_check', 'atrium_free']) {
      if (!(name in found)) {
        throw new ManifestError(`${path} is not the manifest validator module: it does not export ${name}`);
      }
    }
    instances.set(path, found);
  }
  return found;
}

/** One JSON request to an export of the module, JSON answer back. */
function ask(exportName, request) {
  const path = validatorPath();
  const exports = instance(path);
  if (typeof exports[exportName] !== 'function') {
    throw new ManifestError(`the validator module ${path} does not export ${exportName}: it is older than this SDK (rebuild guest-sdk/manifest-wasm)`);
  }
  const bytes = new TextEncoder().encode(JSON.stringify(request));
  const ptr = exports.atrium_alloc(bytes.length);
  new Uint8Array(exports.memory.buffer, ptr, bytes.length).set(bytes);
  const packed = BigInt.asUintN(64, BigInt(exports[exportName](ptr, bytes.length)));
  const at = Number(packed >> 32n);
  const len = Number(packed & 0xffffffffn);
  const answer = new TextDecoder().decode(new Uint8Array(exports.memory.buffer, at, len));
  exports.atrium_free(at, len);
  return JSON.parse(answer);
}

/**
 * Checks a manifest text with the validator module. `file` names it in the findings and picks
 * the format (`.json` is JSON, anything else YAML). Answers `{valid, manifest, findings}`.
 */
export function checkManifest(file, text) {
  return ask('atrium_check', { file, text });
}

/**
 * Runs one of the host's sandbox checks (`{manifest, chain, public_route, check: {kind, ...}}`);
 * answers the outcome: `{ok}`, `{tool_refusal}`, `{agent_refusal}`, `{refusal}` or `{error}`.
 */
export function sandboxCheck(request) {
  return ask('atrium_sandbox', request);
}
