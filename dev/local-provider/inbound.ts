/**
 * What the provider tells the platform without being asked: a contact writing to a number (or to
 * a photoapp account), staff sending, editing or deleting in the business app on a number in
 * coexistence, and changes to a business account. Each /_local route plays one such moment and
 * posts the notification exactly as the real provider would, signed; its answer carries the
 * platform's HTTP status so a caller sees whether the ingress took it.
 */
import { z } from 'zod';
import { graphError, jsonBody, type LocalProviderContext, type LocalRouteModule } from './graph.js';
import { FEP_SECONDS, unix } from './messages.js';
import { chatappEnvelope, type ProviderChannel } from './notify.js';
import { findPhoneNumber, newMessageId, newNumericId } from './state.js';

const inboundMessage = z.object({
  phone_number_id: z.string().min(1),
  from: z.string().min(1),
  profile_name: z.string().default('Local contact'),
  text: z.string().default('Hello'),
  /** The wamid of a message this one replies to (a broadcast, for example). */
  context_id: z.string().optional(),
  /** The wamid of a message sent before: the provider delivers the same message again. */
  message_id: z.string().min(1).optional(),
  /** A click-to-chat ad: the contact enters a free-entry-point window. */
  referral: z.looseObject({ source_id: z.string(), source_url: z.string(), source_type: z.string() }).optional(),
});

const businessAppAction = z.object({
  phone_number_id: z.string().min(1),
  to: z.string().min(1),
  text: z.string().optional(),
  /** The staff message an edit or a deletion is about. */
  message_id: z.string().min(1).optional(),
});
type BusinessAppAction = z.infer<typeof businessAppAction>;

/** What each business-app route echoes: the message staff sent, its edit, or its deletion. */
const BUSINESS_APP_ECHOES: Record<string, (m: BusinessAppAction & { message_id: string }) => Record<string, unknown>> = {
  edits: (m) => ({
    type: 'edit',
    edit: { original_message_id: m.message_id, message: { type: 'text', text: { body: m.text ?? 'edited' } } },
  }),
  revokes: (m) => ({ type: 'revoke', revoke: { original_message_id: m.message_id } }),
};

const accountUpdate = z.object({
  waba_id: z.string().min(1),
  event: z.string().min(1),
  ban_state: z.string().optional(),
  violation_type: z.string().optional(),
  restrictions: z.array(z.object({ restriction_type: z.string(), expiration: z.number().optional() })).optional(),
});

const photoappMessage = z.object({ account_id: z.string().min(1), from: z.string().min(1), text: z.string().default('Hello') });

/** Parses a /_local body, answering a Graph 400 itself when it does not fit. */
async function input<T extends z.ZodType>(koa: Parameters<typeof jsonBody>[0], schema: T): Promise<z.infer<T> | undefined> {
  const body = await jsonBody(koa);
  if (!body) return undefined;
  const parsed = schema.safeParse(body);
  if (!parsed.success) {
    graphError(
      koa,
      400,
      100,
      parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '),
      undefined,
      'GraphMethodException',
    );
    return undefined;
  }
  return parsed.data;
}

/** Posts `value` under `field` for the number's business account; 400 when the number is unknown. */
async function notifyNumber(
  ctx: LocalProviderContext,
  koa: Parameters<typeof jsonBody>[0],
  phoneNumberId: string,
  field: string,
  value: (display: string) => Record<string, unknown>,
  answer: Record<string, unknown>,
): Promise<void> {
  const found = findPhoneNumber(ctx.state, phoneNumberId);
  if (!found) return graphError(koa, 400, 100, `unknown phone number ${phoneNumberId}`, undefined, 'GraphMethodException');
  const display = found.number.display_phone_number;
  const metadata = { display_phone_number: display, phone_number_id: phoneNumberId };
  const envelope = chatappEnvelope(found.waba.id, field, { messaging_product: 'whatsapp', metadata, ...value(display) }, unix());
  koa.body = { ...answer, notification_status: await ctx.notifier.postNotification('chatapp', envelope) };
}

/** The echo of a staff action in the business app: the message itself, or its edit or deletion. */
function echo(to: string, payload: Record<string, unknown>) {
  return { from: '', to, id: newMessageId(), timestamp: String(unix()), ...payload };
}

type Koa = Parameters<typeof jsonBody>[0];

/** A contact writes to a number; with a click-to-chat ad referral it opens a free-entry-point window. */
async function contactWrites(ctx: LocalProviderContext, koa: Koa): Promise<void> {
  const m = await input(koa, inboundMessage);
  if (!m) return;
  const id = m.message_id ?? newMessageId();
  if (m.referral) ctx.state.freeEntryPoints.set(m.from, unix() + FEP_SECONDS);
  const message = {
    from: m.from,
    id,
    timestamp: String(unix()),
    type: 'text',
    text: { body: m.text },
    ...(m.context_id ? { context: { from: m.phone_number_id, id: m.context_id } } : {}),
    ...(m.referral ? { referral: { ctwa_clid: `clid-${id.slice(-8)}`, ...m.referral } } : {}),
  };
  await notifyNumber(
    ctx,
    koa,
    m.phone_number_id,
    'messages',
    () => ({ contacts: [{ profile: { name: m.profile_name }, wa_id: m.from }], messages: [message] }),
    { id, free_entry_point_until: ctx.state.freeEntryPoints.get(m.from) ?? null },
  );
}

/** Staff send, edit or delete in the business app (coexistence): the provider echoes it. */
async function staffActs(ctx: LocalProviderContext, koa: Koa, action: string): Promise<void> {
  const m = await input(koa, businessAppAction);
  if (!m) return;
  const change = BUSINESS_APP_ECHOES[action];
  if (change && !m.message_id) return graphError(koa, 400, 100, 'message_id: required', undefined, 'GraphMethodException');
  const payload = change
    ? change({ ...m, message_id: m.message_id! })
    : { type: 'text', text: { body: m.text ?? 'Sent from the business app' } };
  const item = echo(m.to, payload);
  const value = (display: string) => ({ message_echoes: [{ ...item, from: display }] });
  await notifyNumber(ctx, koa, m.phone_number_id, 'smb_message_echoes', value, { id: item.id });
}

async function accountChanges(ctx: LocalProviderContext, koa: Koa): Promise<void> {
  const u = await input(koa, accountUpdate);
  if (!u) return;
  const value = {
    event: u.event,
    ...(u.ban_state ? { ban_info: { waba_ban_state: u.ban_state } } : {}),
    ...(u.violation_type ? { violation_info: { violation_type: u.violation_type } } : {}),
    ...(u.restrictions ? { restriction_info: u.restrictions } : {}),
  };
  const status = await ctx.notifier.postNotification('chatapp', chatappEnvelope(u.waba_id, 'account_update', value, unix()));
  koa.body = { notification_status: status };
}

async function photoappContactWrites(ctx: LocalProviderContext, koa: Koa): Promise<void> {
  const m = await input(koa, photoappMessage);
  if (!m) return;
  const mid = `aWdfZAG1${newNumericId()}`;
  const now = Date.now();
  const item = { sender: { id: m.from }, recipient: { id: m.account_id }, timestamp: now, message: { mid, text: m.text } };
  const envelope = { object: 'instagram', entry: [{ id: m.account_id, time: now, messaging: [item] }] };
  const channel: ProviderChannel = 'photoapp';
  koa.body = { id: mid, notification_status: await ctx.notifier.postNotification(channel, envelope) };
}

export const inboundModule: LocalRouteModule = ({ local }, ctx) => {
  local.post('/inbound/messages', (koa) => contactWrites(ctx, koa));
  for (const action of ['messages', 'edits', 'revokes']) local.post(`/business_app/${action}`, (koa) => staffActs(ctx, koa, action));
  local.post('/account_updates', (koa) => accountChanges(ctx, koa));
  local.post('/photoapp/inbound/messages', (koa) => photoappContactWrites(ctx, koa));
};
