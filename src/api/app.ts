/** The Koa application: request ids and logs, metrics, the error envelope, auth, routes. */
import crypto from 'node:crypto';
import Router from '@koa/router';
import Koa from 'koa';
import type { Logger } from 'pino';
import { logger } from '../runtime/logger.js';
import { httpRequestDuration } from '../runtime/metrics.js';
import { authenticate, rateLimit } from './auth.js';
import type { ApiDeps } from './deps.js';
import { createRateLimiter } from './rate-limiter.js';
import { DomainError } from '../core/domain-error.js';
import { consoleRoutes } from './console.js';
import { docsRoutes } from './docs.js';
import { errorEnvelope } from './errors.js';
import { buildOpenApiDocument } from './openapi.js';
import { consentRoutes } from './routes/consents.js';
import { contactProfileRoutes } from './routes/contact-profiles.js';
import { broadcastRoutes } from './routes/broadcasts.js';
import { contactRoutes } from './routes/contacts.js';
import { conversationRoutes } from './routes/conversations.js';
import { deliveryRoutes } from './routes/deliveries.js';
import { eventTypeRoutes } from './routes/event-types.js';
import { eventRoutes, publishRoutes } from './routes/events.js';
import { messageRoutes } from './routes/messages.js';
import { operationsRoutes } from './routes/operations.js';
import { providerRoutes } from './routes/provider.js';
import { stageRoutes } from './routes/stages.js';
import { setupCompletionRoutes, setupLinkRoutes } from './routes/setup-links.js';
import { templateRoutes } from './routes/templates.js';
import { outboundRoutes } from './routes/outbound.js';
import { channelAccountRoutes } from './routes/channel-accounts.js';
import { webhookRecoveryRoutes } from './routes/webhook-recovery.js';
import { webhookRoutes } from './routes/webhooks.js';
import { refuseUnstorableInput } from './validation.js';

export function createApp(deps: ApiDeps): Koa {
  const app = new Koa();
  app.proxy = deps.config.trustProxy ?? false;
  // errorEnvelope logs unexpected errors itself: Koa's default listener would print them a second time.
  app.silent = true;

  app.use(async (ctx, next) => {
    const given = ctx.get('x-request-id');
    const requestId = /^[\w-]{1,100}$/.test(given) ? given : crypto.randomUUID();
    // The request's child logger is made only when something logs through it (a warning, an error):
    // the request line below carries the id itself, so most requests never make one.
    ctx.state = new RequestState(requestId);
    ctx.set('X-Request-Id', requestId);
    const started = performance.now();
    try {
      await next();
    } finally {
      const seconds = (performance.now() - started) / 1000;
      const route = (ctx as unknown as { _matchedRoute?: string })._matchedRoute ?? 'unmatched';
      httpRequestDuration.observe({ method: ctx.method, route: String(route), status: String(ctx.status) }, seconds);
      // Probes and scrapes come every few seconds: at info they would bury the requests a person makes.
      const level = QUIET_PATHS.has(ctx.path) ? 'debug' : 'info';
      logger[level]({ requestId, method: ctx.method, path: ctx.path, status: ctx.status, ms: Math.round(seconds * 1000) }, 'request');
    }
  });
  app.use(errorEnvelope);
  app.use(refuseEmptyPathSegment);

  const open = new Router();
  const doc = buildOpenApiDocument();
  open.get('/api/v1/openapi.json', (ctx) => {
    ctx.body = doc;
  });
  // One allowedMethods around every router: the routers share `ctx.matched`, so it answers 405/501
  // exactly as one per router did, without a promise step per router on every request.
  app.use(open.allowedMethods({ throw: true, methodNotAllowed, notImplemented }));

  const guards = [
    authenticate(deps.db, deps.apiKeys),
    rateLimit(deps.rateLimiter ?? createRateLimiter(deps.db, deps.config.rateLimit)),
    refuseUnstorableInput,
  ];
  // The hot route first, in a router of its own: a publish is matched against one path only.
  for (const r of [
    publishRoutes(deps, guards),
    open,
    docsRoutes(),
    consoleRoutes(),
    operationsRoutes(deps),
    providerRoutes(deps),
    setupCompletionRoutes(deps),
  ])
    app.use(r.routes());

  const api = new Router();
  api.use('/api/v1', ...guards);
  for (const r of [
    webhookRoutes(deps),
    webhookRecoveryRoutes(deps),
    deliveryRoutes(deps),
    eventRoutes(deps),
    eventTypeRoutes(),
    contactRoutes(deps),
    templateRoutes(deps),
    setupLinkRoutes(deps),
    broadcastRoutes(deps),
    outboundRoutes(deps),
    channelAccountRoutes(deps),
    stageRoutes(deps),
    contactProfileRoutes(deps),
    consentRoutes(deps),
    conversationRoutes(deps),
    messageRoutes(deps),
  ])
    api.use(r.routes());
  app.use(api.routes());
  return app;
}

const QUIET_PATHS = new Set(['/healthz', '/metrics']);

/** `ctx.state` of a request: its id, and a child logger carrying it, made on first use. */
class RequestState {
  [key: string]: unknown;
  #log: Logger | undefined;
  constructor(readonly requestId: string) {}
  get log(): Logger {
    return (this.#log ??= logger.child({ requestId: this.requestId }));
  }
}

/**
 * `/webhook_deliveries/` (an id variable left empty in a shell) would otherwise match the list
 * route through the router's trailing-slash tolerance and answer every delivery: refuse it clearly.
 */
const refuseEmptyPathSegment: Koa.Middleware = async (ctx, next) => {
  if (ctx.path.startsWith('/api/v1/') && /\/\/|\/$/.test(ctx.path))
    throw new DomainError(404, 'not_found', `no such route: ${ctx.path} has an empty path segment (an id left empty?)`);
  await next();
};

const methodNotAllowed = () => new DomainError(405, 'method_not_allowed', 'method not allowed on this path');
const notImplemented = () => new DomainError(501, 'not_implemented', 'method not implemented');
