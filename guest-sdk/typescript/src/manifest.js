// The app's manifest as the SDK sees it: loaded and strictly validated by the project's own
// validator (the validator module on Node.js; the build's embedded copy inside a component).

import { checkManifest, readManifestFile, recordLoaded } from '#platform';

import { ManifestError } from './errors.js';

/** Validates a manifest text; answers `{text, manifest, findings}` or throws `ManifestError`. */
export function validateText(text, file = 'atrium.app.yaml') {
  const answer = checkManifest(file, text);
  if (!answer.valid || !answer.manifest) throw ManifestError.fromFindings(answer.findings ?? []);
  return { text, manifest: answer.manifest, findings: answer.findings ?? [] };
}

/**
 * Loads and strictly validates a manifest from text (YAML, or JSON when `file` ends in
 * `.json`); answers the normalised manifest. `ManifestError` carries the findings.
 */
export function loadManifestFromString(text, file = 'atrium.app.yaml') {
  if (typeof text !== 'string') throw new ManifestError('loadManifestFromString needs the manifest text as a string');
  return validateText(text, file).manifest;
}

/** Loads and strictly validates a manifest file; answers the normalised manifest. */
export function loadManifest(path) {
  return readValidated(path, new Error().stack).manifest;
}

/** A manifest file, validated: `{text, manifest, path}` (used by `App.fromManifest`). */
export function readValidated(path, stack) {
  const read = readManifestFile(path, stack);
  if (read.manifest) return { text: read.text, manifest: read.manifest, path: read.path };
  const { text, manifest } = validateText(read.text, read.file);
  recordLoaded({ spec: read.spec, path: read.path, file: read.file, text, manifest });
  return { text, manifest, path: read.path };
}

/**
 * What the registration rules (and the test client's call identity) read from a normalised
 * manifest. The test client's sandbox checks read the manifest itself, in the validator module.
 */
export function declarations(manifest) {
  const lifecycle = manifest.lifecycle ?? {};
  return {
    appId: manifest.app_id,
    version: manifest.version,
    requiredScopes: manifest.required_scopes ?? [],
    tools: (manifest.tools ?? []).map((t) => t.name),
    lifecycle: {
      on_install: lifecycle.on_install === true,
      on_uninstall: lifecycle.on_uninstall === true,
      on_inbound: lifecycle.on_inbound === true,
      on_user_added: lifecycle.on_user_added === true,
      schedules: (lifecycle.schedules ?? []).map((s) => s.name),
    },
    agents: (manifest.agents ?? []).map((a) => a.id),
    subscriptions: (manifest.subscribes_to ?? []).map((s) => ({
      emitterApp: s.emitter_app,
      eventName: s.event_name,
      targetAgent: s.target && typeof s.target.agent === 'string' ? s.target.agent : null,
    })),
    routes: (manifest.http_routes ?? []).map((r) => ({ method: String(r.method).toUpperCase(), path: r.path })),
  };
}
