/**
 * In-memory state of the local provider (development and tests only): what the real provider
 * would hold about our app's business accounts, numbers, templates, photoapp accounts, media and
 * the messages sent through it. Route modules read and change it; nothing here does I/O.
 */
import crypto from 'node:crypto';

export interface PhoneNumber {
  id: string;
  display_phone_number: string;
  quality_rating: string;
  messaging_limit_tier: string;
  status: string;
}

export interface Waba {
  id: string;
  name: string;
  phone_numbers: PhoneNumber[];
}

export interface Template {
  id: string;
  name: string;
  language: string;
  category: string;
  status: string;
  components: unknown[];
}

export type TokenStatus = 'ok' | 'expiring' | 'expired' | 'invalid' | 'revoked';

export interface PhotoappAccount {
  id: string;
  username: string;
  /** The account's own access token; the platform sends with it. */
  access_token: string;
  token_status: TokenStatus;
  /** Unix seconds when the token ends; null when it does not expire. */
  expires_at: number | null;
}

export interface Media {
  id: string;
  /** False while the provider is still processing the upload: sends referring to it are refused. */
  ready: boolean;
}

export interface SentMessage {
  id: string;
  channel: 'chatapp' | 'photoapp';
  /** phone_number_id (chatapp) or photoapp account id the message went out from. */
  from: string;
  waba_id: string | null;
  to: string;
  body: unknown;
  /** Statuses already notified, in order. */
  statuses: string[];
  /** Set when the message was told to fail (by recipient or by /_local/messages/{id}/fail). */
  failed: boolean;
  timers: NodeJS.Timeout[];
}

export interface LocalProviderState {
  wabas: Map<string, Waba>;
  /** Templates per waba id. */
  templates: Map<string, Template[]>;
  photoappAccounts: Map<string, PhotoappAccount>;
  media: Map<string, Media>;
  messages: Map<string, SentMessage>;
  /** Recipients whose messages fail after `sent` (e.g. not a user of the channel). */
  failingRecipients: Set<string>;
  /** Recipients inside a free-entry-point window (after an ad referral): window end, unix seconds. */
  freeEntryPoints: Map<string, number>;
  /** Pause between the sent, delivered and read notifications of a message. */
  statusDelayMs: number;
  /** Set to false to stop automatic status notifications (a test then drives them). */
  autoStatuses: boolean;
  /** How long a send waits, once taken, before it answers: a provider slower than the platform's timeout. */
  answerDelayMs: number;
}

export function createLocalProviderState(opts: { statusDelayMs?: number } = {}): LocalProviderState {
  return {
    wabas: new Map(),
    templates: new Map(),
    photoappAccounts: new Map(),
    media: new Map(),
    messages: new Map(),
    failingRecipients: new Set(),
    freeEntryPoints: new Map(),
    statusDelayMs: opts.statusDelayMs ?? 200,
    autoStatuses: true,
    answerDelayMs: 0,
  };
}

/** Numeric ids like the provider's. */
export function newNumericId(): string {
  return String(100_000_000_000_000n + BigInt(crypto.randomInt(1, 2 ** 47)));
}

/** A wamid-like message id. */
export function newMessageId(): string {
  return `wamid.${crypto.randomBytes(18).toString('base64url')}`;
}

/** Registers (or replaces) a business account with its numbers; missing fields get provider-like defaults. */
export function addWaba(
  state: LocalProviderState,
  input: { id?: string; name?: string; phone_numbers?: Array<Partial<PhoneNumber>> },
): Waba {
  const waba: Waba = {
    id: input.id ?? newNumericId(),
    name: input.name ?? 'Local business',
    phone_numbers: (input.phone_numbers ?? []).map((n) => ({
      id: n.id ?? newNumericId(),
      display_phone_number: n.display_phone_number ?? `+1 555 0${crypto.randomInt(100, 999)}`,
      quality_rating: n.quality_rating ?? 'GREEN',
      messaging_limit_tier: n.messaging_limit_tier ?? 'TIER_1K',
      status: n.status ?? 'CONNECTED',
    })),
  };
  state.wabas.set(waba.id, waba);
  return waba;
}

/** The number and its business account, by phone_number_id. */
export function findPhoneNumber(state: LocalProviderState, phoneNumberId: string): { waba: Waba; number: PhoneNumber } | undefined {
  for (const waba of state.wabas.values()) {
    const number = waba.phone_numbers.find((n) => n.id === phoneNumberId);
    if (number) return { waba, number };
  }
  return undefined;
}

/** Stops pending status notifications (on close). */
export function clearTimers(state: LocalProviderState): void {
  for (const m of state.messages.values()) for (const t of m.timers) clearTimeout(t);
}
