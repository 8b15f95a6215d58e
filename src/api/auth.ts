import type { AccountId } from '../core/ids.js';
import type { Context, Next } from 'koa';
import { findApiKeyByHash, type ApiKeyRecord } from '../db/api-keys.js';
import type { ApiKeyCache } from './api-key-cache.js';
import type { RateLimiter } from './rate-limiter.js';
import type { Db } from '../db/pool.js';
import { hashApiKey, type Scope } from '../security/api-key.js';
import { DomainError } from '../core/domain-error.js';

export interface Principal {
  keyId: string;
  accountId: AccountId;
  environment: ApiKeyRecord['environment'];
  scopes: Scope[];
}

/**
 * Resolves `X-API-Key` to its Account and environment; the Account is never taken from the request.
 * Through `keys` when given (recent keys in memory, revocations heard at once: api-key-cache.ts).
 */
export function authenticate(db: Db, keys?: ApiKeyCache) {
  return async (ctx: Context, next: Next) => {
    const key = ctx.get('x-api-key');
    if (!key) throw new DomainError(401, 'unauthorized', 'missing X-API-Key header');
    const hash = key.length <= 200 ? hashApiKey(key) : undefined;
    const record = hash ? await (keys ? keys.find(hash) : findApiKeyByHash(db, hash)) : undefined;
    if (!record) throw new DomainError(401, 'unauthorized', 'invalid API key');
    ctx.state.principal = {
      keyId: record.id,
      accountId: record.account_id as AccountId,
      environment: record.environment,
      scopes: record.scopes,
    } satisfies Principal;
    await next();
  };
}

/** The middleware carries its scope, so test/integration/route-contract.test.ts can compare the router's scopes with the document's. */
export function requireScope(scope: Scope) {
  const check = async (ctx: Context, next: Next) => {
    const principal = ctx.state.principal as Principal;
    if (!principal.scopes.includes(scope)) throw new DomainError(403, 'insufficient_scope', `this API key lacks the ${scope} scope`);
    await next();
  };
  return Object.assign(check, { scope });
}

export function principalOf(ctx: Context): Principal {
  return ctx.state.principal as Principal;
}

/** The per-key rate limit, shared by every API process (src/api/rate-limiter.ts): 429 `rate_limited` with Retry-After. */
export function rateLimit(limiter: RateLimiter) {
  return async (ctx: Context, next: Next) => {
    let verdict = limiter.take(principalOf(ctx).keyId);
    if (verdict instanceof Promise) verdict = await verdict;
    if (!verdict.allowed) {
      throw new DomainError(429, 'rate_limited', 'too many requests for this API key', {
        'Retry-After': String(verdict.retryAfterSeconds),
      });
    }
    await next();
  };
}
