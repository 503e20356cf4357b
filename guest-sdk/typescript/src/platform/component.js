// Manifests inside a component: there is no file system and no validator, so the build
// (atrium-sdk-build) validated the manifests natively and embedded their text and normalised
// form as `globalThis.__atriumEmbeddedManifests` = [{spec, file, text, manifest}].

import { ManifestError } from '../errors.js';

/** Whether this is the component build. */
export const IN_COMPONENT = true;

function embedded() {
  return globalThis.__atriumEmbeddedManifests ?? [];
}

function listing() {
  const names = [...new Set(embedded().map((m) => m.spec))];
  return names.length > 0 ? names.join(', ') : 'none';
}

/** The embedded manifest with this exact text. */
export function checkManifest(file, text) {
  const found = embedded().find((m) => m.text === text);
  if (!found) {
    throw new ManifestError(
      `cannot validate a manifest inside a component: only the manifests that atrium-sdk-build validated and embedded can be loaded (embedded: ${listing()})`,
    );
  }
  return { valid: true, manifest: found.manifest, findings: [] };
}

function normalise(path) {
  return String(path).replaceAll('\\', '/').split('/').filter((s) => s !== '' && s !== '.');
}

/** The embedded manifest named by `path`: the same path as at build time, else the same file name. */
export function readManifestFile(path) {
  const spec = typeof path === 'object' && path !== null && typeof path.href === 'string' ? path.href : String(path);
  const all = embedded();
  let found = all.find((m) => m.spec === spec);
  if (!found) {
    const wanted = normalise(spec).join('/');
    found = all.find((m) => normalise(m.spec).join('/') === wanted);
  }
  if (!found) {
    const name = normalise(spec).pop();
    const same = all.filter((m) => m.file === name);
    if (same.length === 1 || (same.length > 1 && same.every((m) => m.text === same[0].text))) {
      found = same[0];
    }
  }
  if (!found) {
    throw new ManifestError(
      `the manifest ${spec} was not embedded in this component (embedded: ${listing()}): inside a component App.fromManifest reads only the manifests atrium-sdk-build validated`,
    );
  }
  return { file: found.file, path: found.spec, spec, text: found.text, manifest: found.manifest };
}

/** Nothing to record inside a component. */
export function recordLoaded() {}
