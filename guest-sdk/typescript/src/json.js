// JSON text for what crosses the WIT boundary (tool arguments and results, event payloads,
// metadata, bodies). `JSON.stringify` answers `undefined` for a function, a symbol or
// `undefined` itself, which would vanish or travel as no value at all; here that fails, as
// serde_json fails in the Rust SDK, with the caller's own error and wording.

/**
 * The JSON text of `value`, or the error `fail(reason)` makes when it does not serialize (a
 * cycle, a BigInt, a function, ...).
 */
export function jsonText(value, fail) {
  let text;
  try {
    text = JSON.stringify(value);
  } catch (e) {
    throw fail(e.message);
  }
  if (text === undefined) throw fail(`${typeof value} is not JSON`);
  return text;
}
