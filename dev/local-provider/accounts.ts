/**
 * The embedded signup and message templates of the local provider.
 *
 * Graph (under /v24.0, app token):
 * - `GET /oauth/access_token?code=...`: exchanges a signup code for a business token, once.
 * - `GET /debug_token?input_token=...`: what a business token grants, as `granular_scopes`
 *   (`whatsapp_business_management` with the waba ids in `target_ids`).
 * - `POST /{waba_id}/subscribed_apps`: subscribes the app to the waba's webhooks.
 * - `GET /{waba_id}/message_templates?limit&after`: the templates, paged like Graph.
 *
 * - Before `POST /{phone_number_id}/messages` (messages.ts): refuses templates not approved on the
 *   waba (132001, for wabas with known templates) and recipients told to be refused (131030).
 *
 * Control (under /_local):
 * - `POST /_local/signup/complete { setup_url | (token, platform_url), waba, connection_mode?, phone_number_id? }`
 *   plays the Customer's browser: registers the waba and its numbers (numbers in `coexistence` get
 *   `is_on_biz_app: true`), issues a code, and POSTs `{ code, waba_id }` to the platform's
 *   completion route (`{setup_url}/complete`). Answers the code and the platform's answer.
 * - `POST /_local/recipients/{to}/refuse`: the provider refuses every send to this number.
 * - `POST /_local/signup/code { waba_id }` issues a code for a registered waba without completing.
 * - `POST /_local/wabas/{id}/templates { templates: [{ name, language, category?, status?, components? }] }` adds templates.
 * - `POST /_local/templates/{id}/status { status, reason? }` changes a template's status and posts
 *   `message_template_status_update` to the platform.
 */
import crypto from 'node:crypto';
import { Readable } from 'node:stream';
import getRawBody from 'raw-body';
import { z } from 'zod';
import { GRAPH_CODE } from '../../src/core/graph-codes.js';
import { graphError, jsonBody, type LocalRouteModule } from './graph.js';
import { chatappEnvelope } from './notify.js';
import { addWaba, findPhoneNumber, newNumericId, type LocalProviderState, type Template } from './state.js';

/** Signup codes and business tokens, per local provider (kept beside its state, not in it). */
interface SignupGrants {
  /** code → the waba ids it grants; a code is exchanged once. */
  codes: Map<string, string[]>;
  /** business token → the waba ids it grants. */
  tokens: Map<string, string[]>;
  subscribedApps: Set<string>;
}
const grantsOf = new WeakMap<LocalProviderState, SignupGrants>();
function grants(state: LocalProviderState): SignupGrants {
  let g = grantsOf.get(state);
  if (!g) grantsOf.set(state, (g = { codes: new Map(), tokens: new Map(), subscribedApps: new Set() }));
  return g;
}

const numberInput = z.object({
  id: z.string().optional(),
  display_phone_number: z.string().optional(),
  quality_rating: z.string().optional(),
  messaging_limit_tier: z.string().optional(),
  status: z.string().optional(),
});
const signupInput = z.object({
  setup_url: z.string().url().optional(),
  token: z.string().optional(),
  platform_url: z.string().url().optional(),
  waba: z.object({ id: z.string().optional(), name: z.string().optional(), phone_numbers: z.array(numberInput).optional() }),
  connection_mode: z.enum(['dedicated', 'coexistence']).optional(),
  phone_number_id: z.string().optional(),
});
const templateInput = z.object({
  id: z.string().optional(),
  name: z.string().min(1),
  language: z.string().min(1),
  category: z.string().optional(),
  status: z.string().optional(),
  components: z.array(z.unknown()).optional(),
});
const statusInput = z.object({ status: z.string().min(1), reason: z.string().optional() });

function findTemplate(state: LocalProviderState, id: string): { wabaId: string; template: Template } | undefined {
  for (const [wabaId, list] of state.templates) {
    const template = list.find((t) => t.id === id);
    if (template) return { wabaId, template };
  }
  return undefined;
}

const badRequest = (message: string) => (ctx: Parameters<typeof graphError>[0]) =>
  graphError(ctx, 400, GRAPH_CODE.invalidParameter, message, undefined, 'GraphMethodException');

/** Recipients whose sends the provider refuses outright, per local provider. */
const refusedOf = new WeakMap<LocalProviderState, Set<string>>();
function refused(state: LocalProviderState): Set<string> {
  let r = refusedOf.get(state);
  if (!r) refusedOf.set(state, (r = new Set()));
  return r;
}

const sendBody = z.looseObject({
  to: z.string().optional(),
  type: z.string().optional(),
  template: z.looseObject({ name: z.string().optional(), language: z.looseObject({ code: z.string().optional() }).optional() }).optional(),
});

export const accountsModule: LocalRouteModule = ({ graph, local }, { state, notifier }) => {
  /**
   * Runs before the send route (this module is mounted first): refuses, as the provider does, a
   * template that is not approved on the sender's waba (code 132001; only for wabas whose templates
   * this provider knows) and a recipient told to be refused (code 131030).
   */
  graph.post('/:senderId/messages', async (ctx, next) => {
    const found = findPhoneNumber(state, ctx.params.senderId!);
    if (!found) return next();
    const raw = await getRawBody(ctx.req, { limit: '1mb' });
    // The send route reads the body again.
    ctx.req = Object.assign(Readable.from([raw]), { headers: ctx.req.headers }) as unknown as typeof ctx.req;
    let body: z.infer<typeof sendBody> = {};
    try {
      body = sendBody.parse(JSON.parse(raw.toString('utf8')));
    } catch {
      return next();
    }
    if (body.to && refused(state).has(body.to)) {
      return graphError(ctx, 400, 131030, '(#131030) Recipient phone number not in allowed list', undefined, 'OAuthException');
    }
    const templates = state.templates.get(found.waba.id);
    if (body.type === 'template' && templates) {
      const t = templates.find((x) => x.name === body.template?.name && x.language === body.template?.language?.code);
      if (!t || t.status !== 'APPROVED') {
        return graphError(
          ctx,
          400,
          132001,
          `(#132001) Template name does not exist in the translation or is not approved (${t?.status ?? 'unknown'})`,
        );
      }
    }
    await next();
  });

  local.post('/recipients/:to/refuse', (ctx) => {
    refused(state).add(ctx.params.to!);
    ctx.body = { refused: [...refused(state)] };
  });

  graph.get('/oauth/access_token', (ctx) => {
    const code = typeof ctx.query.code === 'string' ? ctx.query.code : '';
    const wabas = grants(state).codes.get(code);
    // Graph answers an unknown or used code with OAuthException 100 / subcode 36009.
    if (!wabas) return graphError(ctx, 400, GRAPH_CODE.invalidParameter, 'This authorization code has been used or is invalid', 36009);
    grants(state).codes.delete(code);
    const token = `EAAB${crypto.randomBytes(24).toString('hex')}`;
    grants(state).tokens.set(token, wabas);
    ctx.body = { access_token: token, token_type: 'bearer' };
  });

  graph.get('/debug_token', (ctx) => {
    const input = typeof ctx.query.input_token === 'string' ? ctx.query.input_token : '';
    const wabas = grants(state).tokens.get(input);
    if (!wabas) {
      ctx.body = { data: { is_valid: false, error: { code: GRAPH_CODE.oauth, message: 'Invalid OAuth access token' } } };
      return;
    }
    ctx.body = {
      data: {
        type: 'SYSTEM_USER',
        is_valid: true,
        scopes: ['whatsapp_business_management', 'whatsapp_business_messaging'],
        granular_scopes: [
          { scope: 'whatsapp_business_management', target_ids: wabas },
          { scope: 'whatsapp_business_messaging', target_ids: wabas },
        ],
      },
    };
  });

  graph.post('/:wabaId/subscribed_apps', (ctx) => {
    if (!state.wabas.has(ctx.params.wabaId!)) return badRequest(`Object with ID '${ctx.params.wabaId}' does not exist`)(ctx);
    grants(state).subscribedApps.add(ctx.params.wabaId!);
    ctx.body = { success: true };
  });

  graph.get('/:wabaId/message_templates', (ctx) => {
    if (!state.wabas.has(ctx.params.wabaId!)) return badRequest(`Object with ID '${ctx.params.wabaId}' does not exist`)(ctx);
    const all = state.templates.get(ctx.params.wabaId!) ?? [];
    const limit = Math.min(Math.max(Number(ctx.query.limit) || 25, 1), 100);
    const start = typeof ctx.query.after === 'string' ? Number(Buffer.from(ctx.query.after, 'base64url').toString()) || 0 : 0;
    const page = all.slice(start, start + limit);
    const end = start + page.length;
    const after = Buffer.from(String(end)).toString('base64url');
    ctx.body = {
      data: page.map((t) => ({ ...t })),
      paging: {
        cursors: { before: Buffer.from(String(start)).toString('base64url'), after },
        ...(end < all.length ? { next: `after=${after}` } : {}),
      },
    };
  });

  local.post('/signup/complete', async (ctx) => {
    const body = await jsonBody(ctx);
    if (!body) return;
    const input = signupInput.safeParse(body);
    if (!input.success) return badRequest(input.error.message)(ctx);
    const { setup_url, token, platform_url, connection_mode, phone_number_id } = input.data;
    const target = setup_url ?? (token && platform_url ? `${platform_url.replace(/\/+$/, '')}/setup/${token}` : undefined);
    if (!target) return badRequest('give setup_url, or token with platform_url')(ctx);
    const waba = addWaba(state, input.data.waba);
    // The provider's marker of a number that stays in the business app (coexistence).
    for (const n of waba.phone_numbers) Object.assign(n, { is_on_biz_app: connection_mode === 'coexistence' });
    const code = `code_${crypto.randomBytes(16).toString('hex')}`;
    grants(state).codes.set(code, [waba.id]);
    const res = await fetch(`${target}/complete`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ code, waba_id: waba.id, ...(phone_number_id ? { phone_number_id } : {}) }),
    });
    const text = await res.text();
    let answer: unknown = text;
    try {
      answer = JSON.parse(text);
    } catch {
      // kept as text
    }
    ctx.body = { code, waba, platform: { status: res.status, body: answer } };
  });

  // A code the browser got but did not hand on yet (tests call the completion themselves).
  local.post('/signup/code', async (ctx) => {
    const body = await jsonBody(ctx);
    if (!body) return;
    const wabaId = typeof body.waba_id === 'string' ? body.waba_id : '';
    if (!state.wabas.has(wabaId)) return badRequest('unknown waba')(ctx);
    const code = `code_${crypto.randomBytes(16).toString('hex')}`;
    grants(state).codes.set(code, [wabaId]);
    ctx.body = { code };
  });

  local.post('/wabas/:id/templates', async (ctx) => {
    const body = await jsonBody(ctx);
    if (!body) return;
    const input = z.object({ templates: z.array(templateInput) }).safeParse(body);
    if (!input.success || !state.wabas.has(ctx.params.id!)) return badRequest('unknown waba or bad body')(ctx);
    const list = state.templates.get(ctx.params.id!) ?? [];
    const added = input.data.templates.map((t): Template => ({
      id: t.id ?? newNumericId(),
      name: t.name,
      language: t.language,
      category: t.category ?? 'UTILITY',
      status: t.status ?? 'PENDING',
      components: t.components ?? [{ type: 'BODY', text: `Hello from ${t.name}` }],
    }));
    state.templates.set(ctx.params.id!, [...list, ...added]);
    ctx.status = 201;
    ctx.body = { data: added };
  });

  local.post('/templates/:id/status', async (ctx) => {
    const body = await jsonBody(ctx);
    if (!body) return;
    const input = statusInput.safeParse(body);
    const found = findTemplate(state, ctx.params.id!);
    if (!input.success || !found) return badRequest('unknown template or bad body')(ctx);
    found.template.status = input.data.status;
    const envelope = chatappEnvelope(
      found.wabaId,
      'message_template_status_update',
      {
        event: input.data.status,
        // The provider sends the id as a number.
        message_template_id: /^\d{1,15}$/.test(found.template.id) ? Number(found.template.id) : found.template.id,
        message_template_name: found.template.name,
        message_template_language: found.template.language,
        reason: input.data.reason ?? 'NONE',
      },
      Math.floor(Date.now() / 1000),
    );
    const delivered = await notifier.postNotification('chatapp', envelope);
    ctx.body = { template: found.template, notification_status: delivered };
  });
};
