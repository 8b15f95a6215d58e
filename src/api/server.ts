import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startServices, type ServiceConfig } from '../services.js';
import { dueChannel } from '../db/due-notifications.js';
import { createPool, warmConnections } from '../db/pool.js';
import { createDueWakes } from '../events/due-wakes.js';
import { endpointWorkflows, temporalCall } from '../delivery/workflow-client.js';
import type { Resolver } from '../security/destination-policy.js';
import { createProviderHttp } from '../channels/provider-http.js';
import { createApiKeyCache } from './api-key-cache.js';
import { createApp } from './app.js';
import { gracefulCloser } from './graceful-close.js';
import { createRateLimiter } from './rate-limiter.js';
import { SERVICE_HOST } from '../runtime/config.js';
import { warmUpLogged } from '../runtime/warm-up.js';
import { warmUpPublishing } from './publish-warm-up.js';

/** The audit list's connections (ApiDeps.auditDb), each process's: its pages come one at a time per client, and some are kept open and warm. */
const AUDIT_CONNECTIONS = 4;
const WARM_AUDIT_CONNECTIONS = 2;

export interface RunningApi {
  url: string;
  close(): Promise<void>;
}

/** A url that reaches a server listening on `host`: a wildcard address is reached on loopback. */
export function listenUrl(host: string, port: number): string {
  if (host === '0.0.0.0' || host === '::') return `http://127.0.0.1:${port}`;
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
}

/** Publishes in flight during the warm-up: as many as the benchmark's 16 publishers keep. */
const WARM_UP_PUBLISHERS = 16;

/** Builds the API's dependencies from configuration and listens on `opts.host`, else HOST, else every interface. */
export async function startApi(config: ServiceConfig, opts: { resolver?: Resolver; host?: string } = {}): Promise<RunningApi> {
  const services = await startServices(config, opts);
  const { db, temporal } = services;
  const workflows = endpointWorkflows(temporal.client, config.taskQueue);
  const wakes = createDueWakes(db, dueChannel(config.taskQueue));
  const apiKeys = createApiKeyCache(db, { databaseUrl: config.databaseUrl });
  const rateLimiter = createRateLimiter(db, config.rateLimit);
  const auditDb = createPool(config.databaseUrl, AUDIT_CONNECTIONS, WARM_AUDIT_CONNECTIONS, { withoutSorts: true });
  await warmConnections(auditDb, WARM_AUDIT_CONNECTIONS);
  const app = createApp({
    config,
    db,
    auditDb,
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
  await warmUpLogged('publish route', config.warmUpRequests, (requests) => warmUpPublishing({ requests, concurrency: WARM_UP_PUBLISHERS }));
  const host = opts.host ?? config.host ?? SERVICE_HOST;
  const server: Server = await new Promise((resolve, reject) => {
    const s = app.listen(config.port, host, () => resolve(s));
    s.once('error', reject);
  });
  const { port } = server.address() as AddressInfo;
  const closeServer = gracefulCloser(server);
  return {
    url: listenUrl(host, port),
    async close() {
      await closeServer();
      await wakes.flush();
      await apiKeys.close();
      // Unspent leased tokens go back to the shared bucket for the other API processes.
      await rateLimiter.close();
      await auditDb.end();
      await services.close();
    },
  };
}
