/**
 * Business accounts and their phone numbers. Graph: `GET /{waba_id}/phone_numbers`. Control:
 * `POST /_local/wabas` creates a business account with numbers; `POST /_local/phone_numbers/{id}/quality`
 * changes a number's tier, quality or status and posts `phone_number_quality_update`.
 */
import { z } from 'zod';
import { graphError, jsonBody, type LocalRouteModule } from './graph.js';
import { chatappEnvelope } from './notify.js';
import { addWaba, findPhoneNumber } from './state.js';

const numberInput = z.object({
  id: z.string().optional(),
  display_phone_number: z.string().optional(),
  quality_rating: z.string().optional(),
  messaging_limit_tier: z.string().optional(),
  status: z.string().optional(),
});
const wabaInput = z.object({ id: z.string().optional(), name: z.string().optional(), phone_numbers: z.array(numberInput).optional() });
const qualityInput = z.object({
  messaging_limit_tier: z.string().optional(),
  quality_rating: z.string().optional(),
  status: z.string().optional(),
  /** Post the notification (default true); false only changes what a re-read answers. */
  notify: z.boolean().optional(),
});

export const numbersModule: LocalRouteModule = ({ graph, local }, { state, notifier }) => {
  graph.get('/:wabaId/phone_numbers', (ctx) => {
    const waba = state.wabas.get(ctx.params.wabaId!);
    if (!waba) {
      return graphError(
        ctx,
        400,
        100,
        `Unsupported get request. Object with ID '${ctx.params.wabaId}' does not exist`,
        33,
        'GraphMethodException',
      );
    }
    ctx.body = { data: waba.phone_numbers.map((n) => ({ ...n })) };
  });

  local.post('/wabas', async (ctx) => {
    const body = await jsonBody(ctx);
    if (!body) return;
    const input = wabaInput.safeParse(body);
    if (!input.success) return graphError(ctx, 400, 100, input.error.message, undefined, 'GraphMethodException');
    ctx.status = 201;
    ctx.body = addWaba(state, input.data);
  });

  local.post('/phone_numbers/:id/quality', async (ctx) => {
    const body = await jsonBody(ctx);
    if (!body) return;
    const input = qualityInput.safeParse(body);
    const found = findPhoneNumber(state, ctx.params.id!);
    if (!input.success || !found) return graphError(ctx, 400, 100, 'unknown number or bad body', undefined, 'GraphMethodException');
    const { notify, ...changes } = input.data;
    Object.assign(found.number, Object.fromEntries(Object.entries(changes).filter(([, v]) => v !== undefined)));
    let delivered: number | null = null;
    if (notify !== false) {
      const envelope = chatappEnvelope(
        found.waba.id,
        'phone_number_quality_update',
        {
          display_phone_number: found.number.display_phone_number,
          phone_number_id: found.number.id,
          event: changes.messaging_limit_tier ? 'UPGRADE' : 'FLAGGED',
          current_limit: found.number.messaging_limit_tier,
          messaging_limit_tier: found.number.messaging_limit_tier,
        },
        Math.floor(Date.now() / 1000),
      );
      delivered = await notifier.postNotification('chatapp', envelope);
    }
    ctx.body = { number: found.number, notification_status: delivered };
  });
};
