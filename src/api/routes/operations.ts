/** Liveness for orchestrators and metrics for Prometheus; neither needs an API key. */
import Router from '@koa/router';
import { pingDatabase } from '../../db/pool.js';
import { registry } from '../../runtime/metrics.js';
import type { ApiDeps } from '../deps.js';
import { UNAVAILABLE_RETRY_AFTER_SECONDS } from '../errors.js';

/** Each dependency gets this long to answer, so a hung connection reads as "down" rather than a hung probe. */
const CHECK_DEADLINE_MS = 2_000;

function within<T>(ms: number, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([work, deadline]).finally(() => clearTimeout(timer));
}

export function operationsRoutes(deps: ApiDeps): Router {
  const router = new Router();
  router.get('/healthz', async (ctx) => {
    const [postgres, temporal] = await Promise.all([
      within(CHECK_DEADLINE_MS, pingDatabase(deps.db)).then(
        () => true,
        () => false,
      ),
      within(CHECK_DEADLINE_MS, deps.temporalHealthy()).catch(() => false),
    ]);
    if (postgres && temporal) {
      ctx.body = { status: 'ok', postgres, temporal };
      return;
    }
    ctx.status = 503;
    ctx.set('Retry-After', String(UNAVAILABLE_RETRY_AFTER_SECONDS));
    ctx.body = {
      error: { code: 'service_unavailable', message: `postgres: ${postgres ? 'up' : 'down'}, temporal: ${temporal ? 'up' : 'down'}` },
    };
  });
  router.get('/metrics', async (ctx) => {
    ctx.type = registry.contentType;
    ctx.body = await registry.metrics();
  });
  return router;
}
