/**
 * The service on its production entry points (startApi, runWorker) against the test run's
 * Postgres and Temporal dev server, on a task queue of its own; with the local provider standing
 * in for the messaging provider when asked. End-to-end test files share it.
 */
import crypto from 'node:crypto';
import { inject } from 'vitest';
import { startApi, type RunningApi } from '../../src/api/server.js';
import { startLocalProvider, type LocalProvider } from '../../dev/local-provider/server.js';
import { freePort } from '../../dev/ports.js';
import { loadConfig, type Config } from '../../src/runtime/config.js';
import { runWorker } from '../../src/worker/main.js';
import { createTenant, type Tenant } from './harness.js';

export interface RunningService {
  api: RunningApi;
  tenant: Tenant;
  config: Config & { databaseUrl: string; temporalAddress: string };
  /** Present when started with `provider`. */
  provider?: LocalProvider;
  /** A call with the tenant's key; JSON in and out. */
  call(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }>;
  close(): Promise<void>;
}

export async function startService(opts: { name: string; provider?: { statusDelayMs?: number } }): Promise<RunningService> {
  let provider: LocalProvider | undefined;
  let providerConfig: Partial<Config> = {};
  let port = 0;
  if (opts.provider) {
    // Each side must know the other's address: the API's port is chosen first.
    port = await freePort();
    const appSecret = `${opts.name}-app-secret`;
    const accessToken = `${opts.name}-access-token`;
    provider = await startLocalProvider({
      platformUrl: `http://127.0.0.1:${port}`,
      appSecret,
      accessToken,
      statusDelayMs: opts.provider.statusDelayMs,
    });
    providerConfig = { providerApiUrl: provider.url, providerAccessToken: accessToken, providerAppSecret: appSecret };
  }
  const config: RunningService['config'] = {
    ...loadConfig({}),
    ...providerConfig,
    port,
    databaseUrl: inject('databaseUrl'),
    temporalAddress: inject('devServerAddress'),
    taskQueue: `e2e-${opts.name}-${crypto.randomUUID()}`,
    encryptionKey: crypto.randomBytes(32).toString('base64'),
    // Test files share one database: a sweep would wake other files' endpoints on this task queue.
    dueSweepMs: 0,
    // A warm-up only makes the first requests faster, and the suite starts many services side by
    // side; the production-shape tests and the warm-ups' own tests run it.
    warmUpRequests: 0,
    // Nor may a maintenance run (one Schedule per namespace) touch other files' photoapp tokens.
    maintenanceSchedule: false,
    allowPrivateCidrs: ['127.0.0.0/8', '::1/128'],
  };
  const stopWorker = new AbortController();
  const worker = runWorker(config, { signal: stopWorker.signal, workflowBundlePath: inject('workflowBundlePath') });
  const [api, tenant] = await Promise.all([startApi(config, { host: '127.0.0.1' }), createTenant()]);
  return {
    api,
    tenant,
    config,
    provider,
    async call(method, path, body) {
      const res = await fetch(api.url + path, {
        method,
        headers: { 'x-api-key': tenant.key, ...(body ? { 'content-type': 'application/json' } : {}) },
        body: body ? JSON.stringify(body) : undefined,
      });
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text) : undefined };
    },
    async close() {
      await provider?.close();
      await api.close();
      stopWorker.abort();
      await worker;
    },
  };
}
