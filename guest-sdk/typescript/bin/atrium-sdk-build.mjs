#!/usr/bin/env node
// atrium-sdk-build [--project DIR] [--out FILE] [--wit DIR]: builds an Atrium app written with
// @atrium/sdk into a WebAssembly component (see src/build/index.js). Exit 0 built (the path on
// stdout), 1 a manifest, registration or build error (on stderr).

import { main } from '../src/build/index.js';

process.exitCode = await main(process.argv.slice(2));
