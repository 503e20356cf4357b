// One call into an app, as the platform makes it: a fresh `Ctx` over a backend, the handler
// awaited, and its failure mapped to the WIT `handler-error`. The component glue and the test
// client both go through here, so a handler runs the same code in a test as in a component.

import { Ctx } from './ctx.js';
import { toHandlerError } from './errors.js';

/** The WIT `result`: `{tag: 'ok', val}` or `{tag: 'err', val: handler-error}`. Never rejects. */
export async function settle(run) {
  try {
    return { tag: 'ok', val: await run() };
  } catch (error) {
    return { tag: 'err', val: toHandlerError(error) };
  }
}

/** The export functions of `handlers`, over an app (or the registration error that stopped it) and a backend. */
export function handlersFor(getApp, backend) {
  const withApp = (run) =>
    settle(async () => {
      const app = getApp();
      return run(app, new Ctx(backend));
    });
  return {
    describe: () => settle(async () => getApp().registration()),
    callTool: (name, args) => withApp((app, ctx) => app.callTool(ctx, name, args)),
    onInstall: () => withApp((app, ctx) => app.lifecycle(ctx, 'on_install')),
    onUninstall: () => withApp((app, ctx) => app.lifecycle(ctx, 'on_uninstall')),
    onInbound: (envelope) => withApp((app, ctx) => app.inbound(ctx, envelope)),
    onUserAdded: (user) => withApp((app, ctx) => app.userAdded(ctx, user)),
    onSchedule: (name) => withApp((app, ctx) => app.schedule(ctx, name)),
    onEvent: (event) => withApp((app, ctx) => app.event(ctx, event)),
    onMessage: (agentSlug, message) => withApp((app, ctx) => app.roomMessage(ctx, agentSlug, message)),
  };
}
