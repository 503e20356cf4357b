// `node --import @atrium/sdk/register ...` (or this file's path): installs the TypeScript
// loader (src/ts-loader.js), so that `node --import @atrium/sdk/register --test test/app.test.ts`
// runs TypeScript tests on Node.js 20 (20.6 or later) with no compile step and no global
// install.

import { register } from 'node:module';

register('./src/ts-loader.js', import.meta.url);
