/** The event catalog, read-only. */
import Router from '@koa/router';
import { EVENT_TYPES, eventJsonSchema } from '../../core/catalog/index.js';

export function eventTypeRoutes(): Router {
  const router = new Router();
  const body = {
    data: EVENT_TYPES.map((d) => ({
      name: d.type,
      category: d.category,
      description: d.description,
      in_stream: d.inStream,
      schema: eventJsonSchema(d),
    })),
  };
  router.get('/api/v1/event_types', (ctx) => {
    ctx.body = body;
  });
  return router;
}
