/**
 * On `phone_number_quality_update` the platform re-reads the business account's numbers from
 * the provider and updates quality, tier and status of its channel accounts at once (SPEC 6.3).
 * Best effort: a provider that cannot answer is logged, and the event is stored all the same.
 */
import { recordNumberHealth, type NumberHealth } from '../../db/channel-accounts.js';
import { ProviderError } from '../provider-http.js';
import { logger } from '../../runtime/logger.js';
import type { InboundDeps } from './inbound-deps.js';

const FIELDS = 'id,display_phone_number,quality_rating,messaging_limit_tier,status';

export async function rereadNumbers(deps: InboundDeps, wabaId: string): Promise<void> {
  if (!deps.providerApi) {
    logger.warn({ wabaId }, 'numbers not re-read: PROVIDER_API_URL is not set');
    return;
  }
  let numbers: NumberHealth[];
  try {
    const answer = await deps.providerApi.get<{ data?: unknown }>(`/${encodeURIComponent(wabaId)}/phone_numbers`, { fields: FIELDS });
    numbers = (Array.isArray(answer.data) ? answer.data : []).filter(
      (n): n is NumberHealth => typeof n === 'object' && n !== null && typeof (n as { id?: unknown }).id === 'string',
    );
  } catch (err) {
    if (!(err instanceof ProviderError)) throw err;
    logger.warn({ wabaId, status: err.status, err: err.message }, 'numbers not re-read: the provider did not answer');
    return;
  }
  const updated = await recordNumberHealth(deps.db, wabaId, numbers);
  logger.info({ wabaId, numbers: numbers.length, updated }, 'numbers re-read after a quality update');
}
