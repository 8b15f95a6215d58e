import type { AccountId, EndpointId } from '../src/core/ids.js';
/**
 * Endpoints for a benchmark, written straight to the database as verified and healthy (no signed
 * test per endpoint), each with its workflow told it exists, as the API does after a create.
 */
import { insertEndpoint } from '../src/db/endpoints.js';
import { inTransaction, type Db } from '../src/db/pool.js';
import type { SecretBox } from '../src/security/secret-box.js';
import type { EndpointWorkflows } from '../src/delivery/workflow-client.js';

export async function insertVerifiedEndpoints(
  db: Db,
  deps: { box: Pick<SecretBox, 'seal'>; workflows: EndpointWorkflows },
  accountId: AccountId,
  urls: string[],
): Promise<EndpointId[]> {
  const ids: EndpointId[] = [];
  for (const url of urls) {
    const e = await inTransaction(db, (tx) =>
      insertEndpoint(tx, {
        accountId,
        customerId: null,
        url,
        events: ['crm'],
        active: true,
        secretCiphertext: deps.box.seal('whsec_bench_secret_value'),
        limit: 1000,
      }),
    );
    await db.query(`UPDATE endpoints SET health_status = 'healthy', verified_at = now() WHERE id = $1`, [e.id]);
    await deps.workflows.notify(e.id, accountId, 'created');
    ids.push(e.id);
  }
  return ids;
}
