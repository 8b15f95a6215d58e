/** Production worker: runs endpoint workflows and their activities against TEMPORAL_ADDRESS and DATABASE_URL. */
import { NativeConnection } from '@temporalio/worker';
import { migrate } from '../db/migrate.js';
import { createPool } from '../db/pool.js';
import { createHttpClient } from '../delivery/http-client.js';
import { loadConfig, type Config } from '../runtime/config.js';
import { logger } from '../runtime/logger.js';
import { connectTemporal, endpointWorkflows, ensureSearchAttributes } from '../temporal/client.js';
import { createDestinationPolicy, type Resolver } from '../security/destination-policy.js';
import { createSecretBox, loadOrCreateEncryptionKey } from '../security/secret-box.js';
import { createSessionRegistry } from '../activities/session-registry.js';
import { dueChannel } from '../db/due-notifications.js';
import { createDueWakes } from '../ingest/due-wakes.js';
import { createWorker } from './create-worker.js';
import { runCrmOutboxSweep } from './crm-outbox-sweep.js';
import { startDueRouter } from './due-router.js';
import { runOutboxSender } from './outbox-sender.js';
import { installTemporalLogging } from './temporal-logging.js';

export async function runWorker(
  config: Config & { databaseUrl: string; temporalAddress: string },
  opts: { signal?: AbortSignal; resolver?: Resolver; workflowBundlePath?: string } = {},
): Promise<void> {
  installTemporalLogging();
  await migrate(config.databaseUrl);
  const db = createPool(config.databaseUrl, 20);
  const { connection: clientConnection, client } = await connectTemporal(config.temporalAddress, config.temporalNamespace);
  await ensureSearchAttributes(clientConnection, config.temporalNamespace);
  const httpClient = createHttpClient({
    policy: createDestinationPolicy({ allowCidrs: config.allowPrivateCidrs, resolver: opts.resolver }),
    timeoutMs: config.deliveryTimeoutMs,
    devCaFile: config.devCaFile,
  });
  const sessions = createSessionRegistry();
  const connection = await NativeConnection.connect({ address: config.temporalAddress });
  const worker = await createWorker({
    connection,
    namespace: config.temporalNamespace,
    taskQueue: config.taskQueue,
    deps: {
      db,
      httpClient,
      secretBox: createSecretBox(loadOrCreateEncryptionKey(config.encryptionKey, config.dataDir)),
      sessions,
      lingerMs: config.deliveryLingerMs,
    },
    workflowBundle: opts.workflowBundlePath ? { codePath: opts.workflowBundlePath } : undefined,
  });
  logger.info({ taskQueue: config.taskQueue }, 'worker started');
  // The SDK already stops the worker on SIGINT/SIGTERM; the signal covers embedded use.
  opts.signal?.addEventListener('abort', () => {
    if (worker.getState() === 'RUNNING') worker.shutdown();
  });
  const router = startDueRouter({
    databaseUrl: config.databaseUrl,
    db,
    channel: dueChannel(config.taskQueue),
    sessions,
    workflows: endpointWorkflows(client, config.taskQueue),
    sweepEveryMs: config.dueSweepMs,
  });
  const outboxStop = new AbortController();
  const outbox = runOutboxSender(db, { smtpUrl: config.smtpUrl, from: config.smtpFrom, signal: outboxStop.signal });
  const crmWakes = createDueWakes(db, dueChannel(config.taskQueue));
  const crmSweep = runCrmOutboxSweep({ db, wakes: crmWakes }, { signal: outboxStop.signal });
  try {
    await worker.run();
  } finally {
    outboxStop.abort();
    await outbox;
    await crmSweep;
    await crmWakes.flush();
    await router.close();
    await clientConnection.close();
    await connection.close();
    await httpClient.close();
    await db.end();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const config = loadConfig();
  if (!config.databaseUrl || !config.temporalAddress) {
    console.error('npm run worker needs DATABASE_URL and TEMPORAL_ADDRESS (npm start runs everything locally).');
    process.exit(2);
  }
  if (config.devMode)
    logger.warn(
      { allowPrivateCidrs: config.allowPrivateCidrs, devCaFile: config.devCaFile },
      'WEBHOOKS_DEV_MODE is on: loopback receivers allowed; never in production',
    );
  await runWorker({ ...config, databaseUrl: config.databaseUrl, temporalAddress: config.temporalAddress });
}
