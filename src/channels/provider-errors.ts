/** How a refusal of the provider reaches an API caller. */
import { DomainError } from '../core/domain-error.js';
import type { ProviderHttp } from './provider-http.js';
import { ProviderError } from './provider-http.js';

/** The provider client, or 503 when this deployment has none (PROVIDER_API_URL unset). */
export function requireProvider(api: ProviderHttp | undefined): ProviderHttp {
  if (!api) throw new DomainError(503, 'provider_not_configured', 'the messaging provider is not configured (PROVIDER_API_URL)');
  return api;
}

/** A ProviderError becomes 502 provider_error naming what the provider said; anything else is rethrown. */
export function asProviderFailure(err: unknown, doing: string): never {
  if (err instanceof ProviderError) {
    const why = err.status === 0 ? 'the provider could not be reached' : `the provider refused (${err.status}): ${err.message}`;
    throw new DomainError(502, 'provider_error', `${doing}: ${why}`);
  }
  throw err;
}
