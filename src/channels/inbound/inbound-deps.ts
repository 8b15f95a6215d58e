import type { IngestDeps } from '../../events/deps.js';
import type { ProviderHttp } from '../provider-http.js';

/** What a provider notification needs beyond storing events. */
export interface InboundDeps extends IngestDeps {
  /** The provider's API, for re-reads a notification asks for (numbers on a quality update); skipped when unset. */
  providerApi?: ProviderHttp;
}

/** A provider notification, or one item of it, that cannot be used; nothing of it is stored. */
export class RejectedNotification extends Error {}
