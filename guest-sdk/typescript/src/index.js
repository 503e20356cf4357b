// @atrium/sdk: write Atrium apps in TypeScript (or JavaScript).
//
//   import { App, InvalidInputError } from '@atrium/sdk';
//   const app = App.fromManifest('atrium.app.yaml');
//   app.tool('greet', async (ctx, args) => ({ message: `Hello, ${args.name}!` }));
//   export default app;
//
// `atrium-sdk-build` turns the project into a component; `@atrium/sdk/testing` runs the
// handlers on Node.js against mocks. See README.md.

export { App } from './app.js';
export { Ctx, isSecretKey } from './ctx.js';
export {
  AgentCallError,
  CAPABILITIES,
  FailedError,
  HandlerError,
  InvalidInputError,
  ManifestError,
  RegistrationError,
  RegistrationErrorKind,
  ToolCallError,
} from './errors.js';
export { HttpRequest, HttpResponse, matchRoute } from './http.js';
export { loadManifest, loadManifestFromString } from './manifest.js';
