// {{name}}: an Atrium app.
//
// `greet` answers with the install's `greeting` setting (and greets the world when no `name`
// is given). `npm test` runs the handler on
// Node.js against the SDK's test client; `atrium deploy` builds the component.

import { App, InvalidInputError, type Ctx } from '@atrium/sdk';

interface GreetArgs {
  name?: unknown;
}

async function greet(ctx: Ctx, args: GreetArgs) {
  const given = args.name ?? 'world';
  if (typeof given !== 'string') throw new InvalidInputError('`name` must be a string');
  const name = given.trim();
  if (name === '') throw new InvalidInputError('`name` is empty');
  const greeting = ctx.config.get('greeting');
  return { message: `${typeof greeting === 'string' ? greeting : 'Hello'}, ${name}!` };
}

/** The app: its tools and handlers, checked against atrium.app.yaml as they are registered. */
const app = App.fromManifest('atrium.app.yaml').tool('greet', greet);

export default app;
