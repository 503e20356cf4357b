// Makes the package self-contained before it is packed or copied (npm pack, npm publish, and
// `npm install --install-links` of a `file:` dependency, which copies the package): the WIT
// (wit/, from the source tree) and the validator module (validator.wasm, from
// ATRIUM_MANIFEST_VALIDATOR). Inside the source tree the SDK finds both without this.
// `--require-validator` (npm pack, npm publish) fails when the validator is not available.

import { cpSync, existsSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const here = (path) => fileURLToPath(new URL(`../${path}`, import.meta.url));
const tree = here('../../wit');
if (existsSync(tree)) {
  rmSync(here('wit'), { recursive: true, force: true });
  cpSync(tree, here('wit'), { recursive: true });
}
const validator = process.env.ATRIUM_MANIFEST_VALIDATOR;
if (validator && existsSync(validator)) {
  cpSync(validator, here('validator.wasm'));
} else if (process.argv.includes('--require-validator')) {
  console.error(
    'error: set ATRIUM_MANIFEST_VALIDATOR to atrium_manifest_wasm.wasm (cargo build -p atrium-manifest-wasm --target wasm32-unknown-unknown --release) to pack the SDK',
  );
  process.exit(1);
}
