// Manifests on Node.js: files read from disk, validated by the validator module.

import { existsSync, readFileSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { ManifestError } from '../errors.js';

/** Checks a manifest text with the validator module: `{valid, manifest, findings}`. */
export { checkManifest } from '../validator.js';

/** Whether this is the component build (no file system, embedded manifests only). */
export const IN_COMPONENT = false;

/**
 * Every manifest loaded from a file by this process, for the build tool to embed; a global,
 * so that a project's own copy of the SDK records into the same list.
 */
const loadedManifests = (globalThis[Symbol.for('atrium.sdk.loadedManifests')] ??= []);

const SDK_DIR = fileURLToPath(new URL('..', import.meta.url));

/** The files of the modules on the current stack, outside the SDK, innermost first. */
function callerDirs(stack) {
  const dirs = [];
  for (const line of String(stack ?? '').split('\n')) {
    const found = /(file:\/\/[^\s)]+?|\/[^\s():]+?):\d+:\d+\)?\s*$/.exec(line.trim());
    if (!found) continue;
    let file;
    try {
      file = found[1].startsWith('file:') ? fileURLToPath(found[1]) : found[1];
    } catch {
      continue;
    }
    if (file.startsWith(SDK_DIR)) continue;
    dirs.push(dirname(file));
  }
  return dirs;
}

/**
 * Where a manifest path points: an absolute path as it is; a relative one against the current
 * directory, else against the directory of the module that asked and its parents up to its
 * package's root (the directory with a package.json), so that tests find the project's
 * manifest from any working directory.
 */
function resolveManifestPath(path, stack) {
  if (isAbsolute(path)) return path;
  const fromCwd = resolve(path);
  if (existsSync(fromCwd)) return fromCwd;
  for (const start of callerDirs(stack)) {
    let dir = start;
    for (;;) {
      const candidate = join(dir, path);
      if (existsSync(candidate)) return candidate;
      if (existsSync(join(dir, 'package.json'))) break;
      const parent = dirname(dir);
      if (parent === dir) break;
      dir = parent;
    }
  }
  return fromCwd;
}

/**
 * Reads a manifest file (a path, or a `file:` URL such as `new URL('x', import.meta.url)`):
 * `{file, path, spec, text}`. `ManifestError` when it cannot be read.
 */
export function readManifestFile(path, stack) {
  let spec = String(path);
  if (typeof path === 'object' && path !== null && typeof path.href === 'string') {
    try {
      spec = fileURLToPath(path.href);
    } catch (e) {
      throw new ManifestError(`cannot read ${path.href}: ${e.message}`);
    }
  }
  const full = resolveManifestPath(spec, stack);
  let text;
  try {
    text = readFileSync(full, 'utf8');
  } catch (e) {
    throw new ManifestError(`cannot read ${spec}: ${e.code === 'ENOENT' ? 'no such file' : e.message} (looked at ${full})`);
  }
  return { file: basename(full), path: full, spec, text };
}

/** Records a manifest loaded from a file (the build tool embeds each). */
export function recordLoaded(entry) {
  loadedManifests.push(entry);
}
