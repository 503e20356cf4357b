// `node --import @atrium/sdk/register`: TypeScript tests run on Node.js 20 with no compile
// step; `./x.js` finds `./x.ts`, and `@atrium/sdk` resolves to this SDK without node_modules.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';

const REGISTER = fileURLToPath(new URL('../register.mjs', import.meta.url));
const FIXTURE = fileURLToPath(new URL('fixtures/atrium.app.yaml', import.meta.url));
const work = mkdtempSync(join(tmpdir(), 'atrium-ts-loader-test-'));
after(() => rmSync(work, { recursive: true, force: true }));

test('a TypeScript test of a TypeScript app runs with node --import register --test', { skip: !process.env.ATRIUM_NODE_MODULES && 'ATRIUM_NODE_MODULES (esbuild) is not set' }, () => {
  mkdirSync(join(work, 'src'));
  mkdirSync(join(work, 'test'));
  writeFileSync(join(work, 'package.json'), '{"type": "module"}');
  writeFileSync(join(work, 'atrium.app.yaml'), readFileSync(FIXTURE, 'utf8'));
  writeFileSync(join(work, 'src/greeting.ts'), 'export const greeting = (name: string): string => `hello ${name}`;\n');
  writeFileSync(
    join(work, 'src/app.ts'),
    [
      "import { App, type Ctx } from '@atrium/sdk';",
      "import { greeting } from './greeting.js';",
      'interface Args { name: string }',
      "const app = App.fromManifest('atrium.app.yaml').tool('ping_tool', async (ctx: Ctx, args: Args) => ({ text: greeting(args.name), tenant: ctx.tenantId }));",
      'export default app;',
      '',
    ].join('\n'),
  );
  writeFileSync(
    join(work, 'test/app.test.ts'),
    [
      "import assert from 'node:assert/strict';",
      "import { test } from 'node:test';",
      "import { TestClient } from '@atrium/sdk/testing';",
      "import app from '../src/app';",
      "test('greets', async () => {",
      "  const result: { text: string } = await new TestClient(app).callTool('ping_tool', { name: 'Ada' });",
      "  assert.equal(result.text, 'hello Ada');",
      '});',
      '',
    ].join('\n'),
  );
  // A test run of its own, not a child of this one (node --test marks its children so).
  const env = { ...process.env };
  delete env.NODE_TEST_CONTEXT;
  const out = spawnSync(process.execPath, ['--import', REGISTER, '--test', 'test/app.test.ts'], { cwd: work, encoding: 'utf8', env });
  assert.equal(out.status, 0, `${out.stdout}\n${out.stderr}`);
  assert.match(out.stdout, /# pass 1/);
});
