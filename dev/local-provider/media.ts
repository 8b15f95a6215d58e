/**
 * Uploaded media and its processing. Control: `POST /_local/media` makes a media id (`ready`
 * false by default; `ready_after_ms` makes it ready by itself later); `POST /_local/media/{id}/ready`
 * finishes it. A send referring to media still processing is refused (messages.ts).
 */
import { graphError, jsonBody, type LocalRouteModule } from './graph.js';
import { GRAPH_CODE } from '../../src/core/graph-codes.js';
import { newNumericId } from './state.js';

export const mediaModule: LocalRouteModule = ({ local }, { state }) => {
  local.post('/media', async (ctx) => {
    const body = await jsonBody(ctx);
    if (!body) return;
    const media = { id: newNumericId(), ready: body.ready === true };
    state.media.set(media.id, media);
    if (typeof body.ready_after_ms === 'number') setTimeout(() => (media.ready = true), body.ready_after_ms).unref();
    ctx.status = 201;
    ctx.body = media;
  });

  local.post('/media/:id/ready', (ctx) => {
    const media = state.media.get(ctx.params.id!);
    if (!media) return graphError(ctx, 404, GRAPH_CODE.invalidParameter, 'unknown media');
    media.ready = true;
    ctx.body = media;
  });
};
