/** Liveness for orchestrators and metrics for Prometheus; neither needs an API key. */
import Router from '@koa/router';
import { registry } from '../../runtime/metrics.js';
import type { ApiDeps } from '../deps.js';

export function operationsRoutes(deps: ApiDeps): Router {
  const router = new Router();
  router.get('/healthz', async (ctx) => {
    const [postgres, temporal] = await Promise.all([
      deps.db.query('SELECT 1').then(() => true, () => false),
      deps.temporalHealthy().catch(() => false),
    ]);
    ctx.status = postgres && temporal ? 200 : 503;
    ctx.body = postgres && temporal ? { status: 'ok', postgres, temporal } : { error: { code: 'unavailable', message: `postgres: ${postgres ? 'up' : 'down'}, temporal: ${temporal ? 'up' : 'down'}` } };
  });
  router.get('/metrics', async (ctx) => {
    ctx.type = registry.contentType;
    ctx.body = await registry.metrics();
  });
  return router;
}
