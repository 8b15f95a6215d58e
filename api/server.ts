import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { migrate } from '../db/migrate.js';
import { dueChannel } from '../db/due-notifications.js';
import { createPool } from '../db/pool.js';
import { createDueWakes } from '../ingest/due-wakes.js';
import { createHttpClient } from '../delivery/http-client.js';
import type { Config } from '../runtime/config.js';
import { connectTemporal, endpointWorkflows } from '../temporal/client.js';
import { createDestinationPolicy, type Resolver } from '../security/destination-policy.js';
import { createSecretBox, loadOrCreateEncryptionKey } from '../security/secret-box.js';
import { createProviderHttp } from '../provider/http.js';
import { createApiKeyCache } from './api-key-cache.js';
import { createApp } from './app.js';

export interface RunningApi {
  url: string;
  close(): Promise<void>;
}

/** Builds the API's dependencies from configuration and listens. */
export async function startApi(
  config: Config & { databaseUrl: string; temporalAddress: string },
  opts: { resolver?: Resolver; host?: string } = {},
): Promise<RunningApi> {
  await migrate(config.databaseUrl);
  const db = createPool(config.databaseUrl, 20);
  const { connection, client } = await connectTemporal(config.temporalAddress, config.temporalNamespace);
  const policy = createDestinationPolicy({ allowCidrs: config.allowPrivateCidrs, resolver: opts.resolver });
  const httpClient = createHttpClient({ policy, timeoutMs: config.deliveryTimeoutMs, devCaFile: config.devCaFile });
  const workflows = endpointWorkflows(client, config.taskQueue);
  const wakes = createDueWakes(db, dueChannel(config.taskQueue));
  const apiKeys = createApiKeyCache(db, { databaseUrl: config.databaseUrl });
  const app = createApp({
    config,
    db,
    secretBox: createSecretBox(loadOrCreateEncryptionKey(config.encryptionKey, config.dataDir)),
    policy,
    httpClient,
    workflows,
    wakes,
    apiKeys,
    provider: { appSecret: config.providerAppSecret, verifyToken: config.providerVerifyToken },
    providerApi: config.providerApiUrl
      ? createProviderHttp({ baseUrl: config.providerApiUrl, accessToken: config.providerAccessToken ?? '' })
      : undefined,
    temporalHealthy: async () => {
      await connection.withDeadline(Date.now() + 2_000, () => connection.workflowService.getSystemInfo({}));
      return true;
    },
  });
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(config.port, opts.host ?? '0.0.0.0', () => resolve(s));
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    async close() {
      await new Promise((r) => server.close(r));
      server.closeAllConnections();
      await wakes.flush();
      await apiKeys.close();
      await httpClient.close();
      await connection.close();
      await db.end();
    },
  };
}
