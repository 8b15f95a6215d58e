/**
 * The local provider: a stand-in for the messaging provider in development and tests (no real
 * provider is reachable from our machines). The platform talks to it over HTTP exactly as to
 * the real one (Graph-like routes under /v24.0), and it posts signed notifications back to the
 * platform's ingress. Test-control routes live under /_local, never under the Graph path.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Router from '@koa/router';
import Koa from 'koa';
import { accountsModule } from './accounts.js';
import { bearerOf, graphError, GRAPH_VERSION, type LocalProviderContext, type LocalRouteModule } from './graph.js';
import { inboundModule } from './inbound.js';
import { mediaModule } from './media.js';
import { messageControlModule } from './message-control.js';
import { messagesModule } from './messages.js';
import { createNotifier } from './notify.js';
import { numbersModule } from './numbers.js';
import { photoappModule } from './photoapp.js';
import { photoappLoginModule } from './photoapp-login.js';
import { clearTimers, createLocalProviderState, type LocalProviderState } from './state.js';

/** Every route module of the local provider, one per line; add yours here. */
const MODULES: LocalRouteModule[] = [
  // First: it checks template sends before messagesModule answers them.
  accountsModule,
  numbersModule,
  messagesModule,
  messageControlModule,
  // Before photoappModule: its `GET /{account_id}` would take `/me`.
  photoappLoginModule,
  photoappModule,
  mediaModule,
  inboundModule,
  // accounts (signup, templates): mounted here by the signup branch
];

export interface LocalProvider {
  /** Value for PROVIDER_API_URL: the Graph base, ending in /v24.0. */
  url: string;
  /** The server's root, for the /_local test-control routes. */
  rootUrl: string;
  state: LocalProviderState;
  close(): Promise<void>;
}

/** A Graph call must carry the app token or a photoapp account's own token (whose status the route judges). */
function requireToken(ctx: LocalProviderContext): Koa.Middleware {
  return async (koa, next) => {
    const token = bearerOf(koa);
    const known = token === ctx.accessToken || [...ctx.state.photoappAccounts.values()].some((a) => a.access_token === token);
    if (!known) return graphError(koa, 401, 190, 'Invalid OAuth access token - Cannot parse access token');
    koa.state.token = token;
    await next();
  };
}

/** The Graph routes (token checked) and the /_local control routes of every module. */
function mountRoutes(ctx: LocalProviderContext): { graph: Router; local: Router } {
  const graph = new Router({ prefix: `/${GRAPH_VERSION}` });
  graph.use(requireToken(ctx));
  const local = new Router({ prefix: '/_local' });
  for (const mount of MODULES) mount({ graph, local }, ctx);
  return { graph, local };
}

/** The /_local control routes the local provider serves, as `METHOD /_local/path/{param}` (the README lists each). */
export function localControlRoutes(): string[] {
  const ctx: LocalProviderContext = {
    state: createLocalProviderState({}),
    notifier: createNotifier({ platformUrl: 'http://127.0.0.1:1', appSecret: 'unused' }),
    accessToken: 'unused',
  };
  return mountRoutes(ctx).local.stack.flatMap((layer) =>
    layer.methods.filter((m) => m !== 'HEAD').map((m) => `${m} ${String(layer.path).replace(/:(\w+)/g, '{$1}')}`),
  );
}

export async function startLocalProvider(opts: {
  port?: number;
  platformUrl: string;
  appSecret: string;
  accessToken: string;
  statusDelayMs?: number;
}): Promise<LocalProvider> {
  const ctx: LocalProviderContext = {
    state: createLocalProviderState({ statusDelayMs: opts.statusDelayMs }),
    notifier: createNotifier({ platformUrl: opts.platformUrl, appSecret: opts.appSecret }),
    accessToken: opts.accessToken,
  };
  const { graph, local } = mountRoutes(ctx);

  const app = new Koa();
  app.use(async (koa, next) => {
    try {
      await next();
    } catch (err) {
      graphError(koa, 500, 1, `local provider error: ${(err as Error).message}`, undefined, 'OAuthException');
    }
    if (koa.status === 404 && koa.body === undefined)
      graphError(koa, 400, 100, `Unknown path ${koa.path}`, undefined, 'GraphMethodException');
  });
  app.use(local.routes()).use(local.allowedMethods());
  app.use(graph.routes()).use(graph.allowedMethods());

  const server = http.createServer(app.callback());
  server.listen(opts.port ?? 0, '127.0.0.1');
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  const rootUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url: `${rootUrl}/${GRAPH_VERSION}`,
    rootUrl,
    state: ctx.state,
    async close() {
      clearTimers(ctx.state);
      await new Promise((r) => server.close(r));
      server.closeAllConnections();
    },
  };
}
