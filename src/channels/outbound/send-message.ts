/**
 * Sending a message through the channel account's provider (DECISIONS "Outbound messages").
 * The provider must accept it first; only then is it registered, with the provider's id, its
 * contact and conversation, so its statuses become events. Nothing is registered when the
 * provider refuses, when media is still processing, or when a photoapp token needs reconnecting.
 * Used by `POST /api/v1/messages` and by broadcasts: keep the signature of sendMessage stable.
 */
import {
  chatappBody,
  checkForChannel,
  parseSendRequest,
  photoappBody,
  storedContent,
  type SendMessageRequest,
} from '../../core/outbound-message.js';
import { DomainError, notFound } from '../../core/domain-error.js';
import { blocksSending } from '../../core/token-status.js';
import { getChannelAccountFor, type ChannelAccountRow } from '../../db/channel-accounts.js';
import { getPhotoappToken, recordTokenVerdict } from '../../db/photoapp-tokens.js';
import { registerOutboundMessage, upsertContact, upsertConversation, type MessageRow } from '../../db/messaging.js';
import { inTransaction, type Db } from '../../db/pool.js';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  ABANDONED_AFTER_SECONDS,
  completeIdempotencyKey,
  markIdempotencyKeyUnknown,
  releaseIdempotencyKey,
  reserveIdempotencyKey,
} from '../../db/send-idempotency.js';
import { canonicalJson, sha256Hex } from '../../core/catalog/canonical-json.js';
import { GRAPH_CODE, MEDIA_PROCESSING_SUBCODE } from '../../core/graph-codes.js';
import { ProviderError, type ProviderHttp } from '../provider-http.js';
import { logger } from '../../runtime/logger.js';
import { requireProvider } from '../provider-errors.js';
import type { SecretBox } from '../../security/secret-box.js';
import { accountToken, refreshTokenStatus, statusOfRefusal, type AccountToken } from './token-status.js';

/** The code of a send the provider may have taken without answering. */
export const OUTCOME_UNKNOWN = 'provider_outcome_unknown';

/** Seconds a client waits before retrying a send whose media is still processing, or when the provider was unreachable. */
export const RETRY_AFTER_SECONDS = 5;

export interface SendDeps {
  db: Db;
  /** Unset: 503 provider_not_configured. */
  providerApi?: ProviderHttp;
  /** Opens a photoapp account's own token: its sends and token reads use it, never the app's. */
  secretBox: Pick<SecretBox, 'open'>;
  now?: () => Date;
}

export interface Principal {
  accountId: string;
  environment: 'live' | 'sandbox';
}

export interface SentMessage extends MessageRow {
  channel: 'chatapp' | 'photoapp';
  /** True when an Idempotency-Key found an earlier send: nothing was sent this time. */
  replayed: boolean;
}

interface IdempotencyScope {
  accountId: string;
  environment: string;
  key: string;
}

const reconnect = (why: string) =>
  new DomainError(409, 'reconnect_required', `the photoapp account's token is ${why}; reconnect the account before sending`);

/** What a provider refusal means to the sender; the message of the provider is kept for the caller. */
async function refusalOf(deps: SendDeps, ca: ChannelAccountRow, err: ProviderError, token?: AccountToken): Promise<DomainError> {
  if (err.outcomeUnknown) {
    return new DomainError(
      504,
      OUTCOME_UNKNOWN,
      `the messaging provider did not answer (${err.message}); the message may have been sent. Check the conversation before sending it again`,
    );
  }
  if (err.status === 0) {
    return new DomainError(503, 'provider_unavailable', 'the messaging provider could not be reached; retry later', {
      'Retry-After': String(RETRY_AFTER_SECONDS),
    });
  }
  if (
    err.providerCode === GRAPH_CODE.mediaNotReady &&
    (err.providerSubcode === MEDIA_PROCESSING_SUBCODE || err.providerSubcode === undefined)
  ) {
    return new DomainError(202, 'media_not_ready', 'the media is still being processed by the provider; retry after the delay', {
      'Retry-After': String(RETRY_AFTER_SECONDS),
    });
  }
  const refused = token && statusOfRefusal(err);
  if (token && refused) {
    await recordTokenVerdict(deps.db, ca.id, token.sealed, { status: refused, expiresAt: ca.token_expires_at });
    return reconnect(refused);
  }
  return new DomainError(502, 'provider_error', `the provider refused the message: ${err.message}`);
}

async function providerSend(
  deps: SendDeps & { providerApi: ProviderHttp },
  ca: ChannelAccountRow,
  r: SendMessageRequest,
  to: string,
  token: AccountToken | undefined,
) {
  if (ca.channel === 'chatapp') {
    if (!ca.phone_number_id) throw new DomainError(409, 'channel_account_not_ready', 'the channel account has no phone number yet');
    const answer = await deps.providerApi.post<{ messages?: Array<{ id?: unknown }> }>(
      `/${encodeURIComponent(ca.phone_number_id)}/messages`,
      chatappBody(r, to),
    );
    return answer.messages?.[0]?.id;
  }
  if (!ca.provider_account_id || !token) {
    throw new DomainError(409, 'channel_account_not_ready', 'the channel account has no provider account yet');
  }
  const answer = await deps.providerApi.post<{ message_id?: unknown }>(
    `/${encodeURIComponent(ca.provider_account_id)}/messages`,
    photoappBody(r, to),
    token.plain,
  );
  return answer.message_id;
}

/**
 * The provider's send. A photoapp token refused because maintenance renewed it meanwhile (the
 * stored one is no longer the one used) is no reason to reconnect: sent once more with the new one.
 */
async function sendWithToken(
  deps: SendDeps & { providerApi: ProviderHttp },
  ca: ChannelAccountRow,
  r: SendMessageRequest,
  to: string,
  token: AccountToken | undefined,
): Promise<unknown> {
  try {
    return await providerSend(deps, ca, r, to, token);
  } catch (err) {
    if (!(err instanceof ProviderError)) throw err;
    const stored = token && statusOfRefusal(err) ? await getPhotoappToken(deps.db, ca.id) : undefined;
    if (!token || !stored || stored.equals(token.sealed)) throw await refusalOf(deps, ca, err, token);
    const renewed = { sealed: stored, plain: deps.secretBox.open(stored) };
    try {
      return await providerSend(deps, ca, r, to, renewed);
    } catch (again) {
      if (again instanceof ProviderError) throw await refusalOf(deps, ca, again, renewed);
      throw again;
    }
  }
}

/** The provider's send, then the registration (with the idempotency key's completion, when given). */
async function send(
  deps: SendDeps & { providerApi: ProviderHttp },
  principal: Principal,
  r: SendMessageRequest,
  idempotency?: IdempotencyScope,
  progress: { accepted: boolean } = { accepted: false },
): Promise<SentMessage> {
  const ca = await getChannelAccountFor(deps.db, principal, r.channel_account_id);
  if (!ca) throw notFound('channel account');
  const { to } = checkForChannel(r, ca.channel);

  let token: AccountToken | undefined;
  if (ca.channel === 'photoapp') {
    token = await accountToken(deps, ca.id);
    if (!token) throw reconnect('invalid (the account has no token of its own: connect it through a photoapp setup link)');
    const verdict = await refreshTokenStatus(deps, ca, token);
    const status = verdict?.status ?? ca.token_status;
    if (blocksSending(status)) throw reconnect(status!);
  }

  const externalId = await sendWithToken(deps, ca, r, to, token);
  // From here on a person may have the message: no failure may free the Idempotency-Key.
  progress.accepted = true;
  if (typeof externalId !== 'string' || externalId === '') {
    throw new DomainError(502, 'provider_error', 'the provider accepted the message but named no message id');
  }

  const message = await inTransaction(deps.db, async (tx) => {
    const contact = await upsertContact(tx, ca.account_id, ca.id, {
      wa_id: to,
      user_id: ca.channel === 'photoapp' ? to : null,
      username: null,
      phone: ca.channel === 'chatapp' ? to : null,
      profile_name: null,
    });
    const conversationId = await upsertConversation(tx, ca.account_id, ca.id, contact.id);
    const row = await registerOutboundMessage(tx, {
      accountId: ca.account_id,
      channelAccountId: ca.id,
      contactId: contact.id,
      conversationId,
      externalId,
      type: r.type,
      status: 'queued',
      toRecipient: to,
      content: storedContent(r),
    });
    if (idempotency) await completeIdempotencyKey(tx, { ...idempotency, messageId: row.id });
    return row;
  });
  logger.debug({ messageId: message.id, channelAccountId: ca.id }, 'message sent');
  return { ...message, channel: ca.channel, replayed: false };
}

/**
 * Sends `request` (the body of POST /api/v1/messages, validated here again) from a channel
 * account of the principal's Account and environment. Resolves with the registered message
 * (status `queued`); throws DomainError: 422 invalid_message, 404 not_found, 409
 * reconnect_required, 202 media_not_ready (with Retry-After), 502 provider_error, 503
 * provider_unavailable / provider_not_configured, 504 provider_outcome_unknown. With
 * `idempotencyKey`, a repeated call with the same key and request answers the first message
 * (`replayed: true`) without sending again; the same key with another request is 422
 * idempotency_key_reused, one still in flight 409 idempotency_key_in_use. A send the provider
 * refused frees its key; one the provider took or may have taken (no answer, an answer without a
 * message id, a registration that failed after its 2xx) keeps it, and its retries are 409
 * send_outcome_unknown: a person must not get the message twice.
 */
export async function sendMessage(
  deps: SendDeps,
  principal: Principal,
  request: unknown,
  opts: { idempotencyKey?: string } = {},
): Promise<SentMessage> {
  const r = parseSendRequest(request);
  const providerApi = requireProvider(deps.providerApi);
  if (opts.idempotencyKey === undefined) return send({ ...deps, providerApi }, principal, r);

  const scope: IdempotencyScope = { accountId: principal.accountId, environment: principal.environment, key: opts.idempotencyKey };
  const requestHash = sha256Hex(canonicalJson(r));
  const found = await reserveIdempotencyKey(deps.db, { ...scope, requestHash });
  if (found.state !== 'reserved') {
    if (found.requestHash !== requestHash) {
      throw new DomainError(422, 'idempotency_key_reused', 'this Idempotency-Key was already used with a different request');
    }
    if (found.state === 'outcome_unknown') {
      throw new DomainError(
        409,
        'send_outcome_unknown',
        `an earlier send with this Idempotency-Key may have reached the provider without its outcome being recorded (${found.since.toISOString()}), so it is not sent again; send it under a new key if it did not arrive`,
      );
    }
    if (found.state === 'in_flight') {
      throw new DomainError(409, 'idempotency_key_in_use', 'a request with this Idempotency-Key is still in flight; retry later', {
        'Retry-After': '1',
      });
    }
    return { ...found.message, replayed: true };
  }
  const progress = { accepted: false };
  try {
    return await send({ ...deps, providerApi }, principal, r, scope, progress);
  } catch (err) {
    if (progress.accepted || (err instanceof DomainError && err.code === OUTCOME_UNKNOWN)) await keepKeyBound(deps.db, scope);
    else await releaseIdempotencyKey(deps.db, scope);
    throw err;
  }
}

/** Pause between attempts to mark a key; the attempts end well before a reservation counts as abandoned. */
const MARK_RETRY_MS = 1_000;
const MARK_ATTEMPTS = Math.floor(ABANDONED_AFTER_SECONDS / 2);

/**
 * Marks the key of a send the provider took or may have taken. Retried: the failure that got us
 * here may be Postgres itself, and a reservation left unmarked is taken over as abandoned after a
 * minute, which would send the message again.
 */
async function keepKeyBound(db: Db, scope: IdempotencyScope): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await markIdempotencyKeyUnknown(db, scope);
      return;
    } catch (err) {
      if (attempt >= MARK_ATTEMPTS) {
        logger.error(
          { err, key: scope.key, accountId: scope.accountId },
          'the Idempotency-Key of a send the provider took could not be kept',
        );
        return;
      }
      await sleep(MARK_RETRY_MS);
    }
  }
}
