import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startServices, type ServiceConfig } from '../services.js';
import { dueChannel } from '../db/due-notifications.js';
import { createDueWakes } from '../events/due-wakes.js';
import { endpointWorkflows, temporalCall } from '../delivery/workflow-client.js';
import type { Resolver } from '../security/destination-policy.js';
import { createProviderHttp } from '../channels/provider-http.js';
import { createApiKeyCache } from './api-key-cache.js';
import { createApp } from './app.js';
import { gracefulCloser } from './graceful-close.js';
import { createRateLimiter } from './rate-limiter.js';

export interface RunningApi {
  url: string;
  close(): Promise<void>;
}

/** Builds the API's dependencies from configuration and listens. */
export async function startApi(config: ServiceConfig, opts: { resolver?: Resolver; host?: string } = {}): Promise<RunningApi> {
  const services = await startServices(config, opts);
  const { db, temporal } = services;
  const workflows = endpointWorkflows(temporal.client, config.taskQueue);
  const wakes = createDueWakes(db, dueChannel(config.taskQueue));
  const apiKeys = createApiKeyCache(db, { databaseUrl: config.databaseUrl });
  const rateLimiter = createRateLimiter(db, config.rateLimit);
  const app = createApp({
    config,
    db,
    secretBox: services.secretBox,
    policy: services.policy,
    httpClient: services.httpClient,
    workflows,
    wakes,
    apiKeys,
    rateLimiter,
    provider: { appSecret: config.providerAppSecret, verifyToken: config.providerVerifyToken },
    providerApi: config.providerApiUrl
      ? createProviderHttp({ baseUrl: config.providerApiUrl, accessToken: config.providerAccessToken ?? '' })
      : undefined,
    temporalHealthy: async () => {
      await temporalCall(temporal.connection, () =>
        temporal.connection.withDeadline(Date.now() + 2_000, () => temporal.connection.workflowService.getSystemInfo({})),
      );
      return true;
    },
  });
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(config.port, opts.host ?? '0.0.0.0', () => resolve(s));
  });
  const { port } = server.address() as AddressInfo;
  const closeServer = gracefulCloser(server);
  return {
    url: `http://127.0.0.1:${port}`,
    async close() {
      await closeServer();
      await wakes.flush();
      await apiKeys.close();
      // Unspent leased tokens go back to the shared bucket for the other API processes.
      await rateLimiter.close();
      await services.close();
    },
  };
}
