import type { Config } from '../runtime/config.js';
import type { Db } from '../db/pool.js';
import type { HttpClient } from '../delivery/http-client.js';
import type { EndpointWorkflows } from '../delivery/workflow-client.js';
import type { DestinationPolicy } from '../security/destination-policy.js';
import type { SecretBox } from '../security/secret-box.js';
import type { DueWakes } from '../events/due-wakes.js';
import type { ProviderHttp } from '../channels/provider-http.js';
import type { ApiKeyCache } from './api-key-cache.js';
import type { RateLimiter } from './rate-limiter.js';

/** What the API needs from the outside world; tests build it from real components. */
export interface ApiDeps {
  config: Pick<Config, 'endpointLimit' | 'rateLimit'> & Partial<Pick<Config, 'trustProxy'>>;
  db: Db;
  /**
   * The audit list's pool, made `withoutSorts` (src/db/pool.ts): its account-wide pages need sorts
   * priced out, which on `db` (when this is unset) takes a SET and a RESET around each page.
   */
  auditDb?: Db;
  secretBox: SecretBox;
  policy: DestinationPolicy;
  httpClient: HttpClient;
  workflows: EndpointWorkflows;
  /** Recently used API keys; every request is looked up in Postgres when unset. */
  apiKeys?: ApiKeyCache;
  /** The per-key rate limit shared with the other API processes; one of its own, on `db` and `config.rateLimit`, when unset. */
  rateLimiter?: RateLimiter;
  /** Coalesced wake-ups for endpoints that got new deliveries. */
  wakes: DueWakes;
  /** Messaging provider webhook: signature secret and handshake token; unset disables the ingress. */
  provider: { appSecret?: string; verifyToken?: string };
  /** The provider's API (sending, re-reads); routes that need it answer 503 `provider_not_configured` when unset. */
  providerApi?: ProviderHttp;
  /** The clock ingest judges the Free plan by (SPEC 8); the system clock when unset. Tests pin it. */
  now?: () => Date;
  /** True when Temporal answers; used by /healthz. */
  temporalHealthy: () => Promise<boolean>;
}
