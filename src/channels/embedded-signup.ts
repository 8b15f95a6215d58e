/**
 * The end of the provider's embedded signup (DECISIONS "Setup links", SPEC 6.3
 * `chatapp.phone_number.connected`). The Customer's browser finished the provider's flow and
 * hands the platform a code through the setup link's page. The platform exchanges the code for
 * a business token (Graph `GET /oauth/access_token`), reads what the token grants (`GET
 * /debug_token`: the business accounts in `granular_scopes`), subscribes the app to each business
 * account, reads its numbers and connects them as channel accounts of the link's Customer and
 * environment. Each connected number emits `chatapp.phone_number.connected` once per (link,
 * number): repeating the same link stores nothing new, another link for the same number does.
 */
import crypto from 'node:crypto';
import { z } from 'zod';
import { getEventDefinition } from '../core/catalog/index.js';
import { recordNumberHealth } from '../db/channel-accounts.js';
import { DomainError, notFound } from '../core/domain-error.js';
import { findSetupLinkByTokenHash, markSetupLinkCompleted, type ConnectionMode, type SetupLinkRow } from '../db/setup-links.js';
import { upsertConnectedNumber } from '../db/signup-connections.js';
import { syncWabaTemplates } from './outbound/template-sync.js';
import { asProviderFailure } from './provider-errors.js';
import { ProviderError, type ProviderHttp } from './provider-http.js';
import { logger } from '../runtime/logger.js';
import { wakeFor, type IngestDeps } from '../events/deps.js';
import { storeEvent } from '../events/store-event.js';

export interface SignupDeps extends IngestDeps {
  provider: ProviderHttp;
  /** Sent as client_secret of the code exchange, as the provider's OAuth asks. */
  appSecret?: string;
}

export interface SignupRequest {
  code: string;
  /** The business account the signup session named; must be one the code grants. */
  waba_id?: string;
  /** Connect only this number. */
  phone_number_id?: string;
}

export interface SignupResult {
  setup_link_id: string;
  waba_id: string;
  connected: { channel_account_id: string; phone_number_id: string; display_phone_number: string; connection_mode: ConnectionMode }[];
  skipped: { phone_number_id: string; reason: string }[];
}

/** A link's token: `setup_` and 32 random bytes; only its SHA-256 is stored. */
export function newSetupToken(): { token: string; hash: Buffer } {
  const token = `setup_${crypto.randomBytes(32).toString('base64url')}`;
  return { token, hash: hashSetupToken(token) };
}

export function hashSetupToken(token: string): Buffer {
  return crypto.createHash('sha256').update(token, 'utf8').digest();
}

const tokenAnswer = z.looseObject({ access_token: z.string().min(1) });
const debugAnswer = z.looseObject({
  data: z.looseObject({
    granular_scopes: z.array(z.looseObject({ scope: z.string(), target_ids: z.array(z.string()).optional() })).optional(),
  }),
});
const numbersAnswer = z.looseObject({
  data: z.array(
    z.looseObject({
      id: z.union([z.string().min(1), z.number()]).transform(String),
      display_phone_number: z.string().min(1),
      is_on_biz_app: z.boolean().optional(),
      quality_rating: z.string().nullish(),
      messaging_limit_tier: z.string().nullish(),
      status: z.string().nullish(),
    }),
  ),
});

function shape<T extends z.ZodType>(schema: T, raw: unknown, doing: string): z.infer<T> {
  const parsed = schema.safeParse(raw);
  if (!parsed.success) throw new DomainError(502, 'provider_error', `${doing}: the provider answered an unexpected shape`);
  return parsed.data;
}

/** The link a token opens, while it is usable: unknown is 404, expired is 410. */
export async function openSetupLink(deps: IngestDeps, token: string, now: Date): Promise<SetupLinkRow> {
  const link = token.length <= 200 ? await findSetupLinkByTokenHash(deps.db, hashSetupToken(token)) : undefined;
  if (!link) throw notFound('setup link');
  if (link.expires_at <= now) throw new DomainError(410, 'setup_link_expired', 'this setup link has expired; ask for a new one');
  return link;
}

/** Code → business token → the business accounts it grants. */
async function grantedWabas(deps: SignupDeps, code: string): Promise<string[]> {
  let raw: unknown;
  try {
    raw = await deps.provider.get('/oauth/access_token', { code, ...(deps.appSecret ? { client_secret: deps.appSecret } : {}) });
  } catch (err) {
    if (err instanceof ProviderError && err.status >= 400 && err.status < 500) {
      throw new DomainError(422, 'invalid_signup_code', `the provider refused the signup code: ${err.message}`);
    }
    asProviderFailure(err, 'exchanging the signup code');
  }
  const businessToken = shape(tokenAnswer, raw, 'exchanging the signup code').access_token;
  try {
    raw = await deps.provider.get('/debug_token', { input_token: businessToken });
  } catch (err) {
    asProviderFailure(err, 'reading what the signup granted');
  }
  const scopes = shape(debugAnswer, raw, 'reading what the signup granted').data.granular_scopes ?? [];
  return [...new Set(scopes.filter((s) => s.scope === 'whatsapp_business_management').flatMap((s) => s.target_ids ?? []))];
}

async function readNumbers(provider: ProviderHttp, wabaId: string) {
  try {
    // Without the subscription the provider sends none of the waba's notifications.
    await provider.post(`/${encodeURIComponent(wabaId)}/subscribed_apps`, {});
    const raw = await provider.get(`/${encodeURIComponent(wabaId)}/phone_numbers`, {
      fields: 'id,display_phone_number,is_on_biz_app,quality_rating,messaging_limit_tier,status',
    });
    return shape(numbersAnswer, raw, "reading the business account's numbers").data;
  } catch (err) {
    return asProviderFailure(err, "reading the business account's numbers");
  }
}

/** Completes a chatapp link opened by openSetupLink at `now`. */
export async function completeSignup(deps: SignupDeps, link: SetupLinkRow, req: SignupRequest, now: Date): Promise<SignupResult> {
  const granted = await grantedWabas(deps, req.code);
  if (req.waba_id !== undefined && !granted.includes(req.waba_id)) {
    throw new DomainError(422, 'waba_not_granted', `the signup did not grant access to business account ${req.waba_id}`);
  }
  const wabaId = req.waba_id ?? granted[0];
  if (!wabaId) throw new DomainError(422, 'waba_not_granted', 'the signup granted no business account');

  const numbers = (await readNumbers(deps.provider, wabaId)).filter((n) => !req.phone_number_id || n.id === req.phone_number_id);
  const def = getEventDefinition('chatapp.phone_number.connected')!;
  const result: SignupResult = { setup_link_id: link.id, waba_id: wabaId, connected: [], skipped: [] };
  for (const n of numbers) {
    const ca = await upsertConnectedNumber(deps.db, {
      accountId: link.account_id,
      customerId: link.customer_id,
      environment: link.environment,
      wabaId,
      phoneNumberId: n.id,
      display: n.display_phone_number,
    });
    if (!ca) {
      result.skipped.push({ phone_number_id: n.id, reason: 'number_in_use' });
      continue;
    }
    // The provider says whether the number stays in the business app; the link's offer otherwise.
    const mode: ConnectionMode = n.is_on_biz_app === undefined ? link.connection_mode : n.is_on_biz_app ? 'coexistence' : 'dedicated';
    const data = def.data.parse({
      waba_id: wabaId,
      phone_number_id: n.id,
      display_phone_number: n.display_phone_number,
      connection_mode: mode,
      setup_link_id: link.id,
      occurred_at: now.toISOString(),
    });
    const stored = await storeEvent(
      deps.db,
      {
        accountId: link.account_id,
        environment: link.environment,
        def,
        data,
        refs: {},
        customerId: link.customer_id,
        channelAccount: ca,
        externalId: null,
        messageResourceId: null,
        contactRef: null,
        streamContext: {},
        occurredAt: now,
      },
      now,
    );
    if (stored.created) wakeFor(deps, link.account_id, stored);
    result.connected.push({
      channel_account_id: ca.id,
      phone_number_id: n.id,
      display_phone_number: n.display_phone_number,
      connection_mode: mode,
    });
  }
  // The numbers were just read: their quality, tier and status are known from the start.
  if (result.connected.length > 0) {
    const connected = new Set(result.connected.map((c) => c.phone_number_id));
    await recordNumberHealth(
      deps.db,
      wabaId,
      numbers.filter((n) => connected.has(n.id)),
    );
  }
  await markSetupLinkCompleted(deps.db, link.id, now);
  await syncTemplatesAfterSignup(deps, link, wabaId);
  return result;
}

/** A fresh connection's templates are there to pick at once; a failure here only waits for the next sync. */
async function syncTemplatesAfterSignup(deps: SignupDeps, link: SetupLinkRow, wabaId: string): Promise<void> {
  try {
    await syncWabaTemplates(deps.db, deps.provider, { accountId: link.account_id, environment: link.environment, wabaId });
  } catch (err) {
    logger.warn({ wabaId, err: (err as Error).message }, 'template sync after signup failed');
  }
}
