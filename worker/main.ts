/** Production worker: runs endpoint workflows and their activities against TEMPORAL_ADDRESS and DATABASE_URL. */
import { NativeConnection } from '@temporalio/worker';
import { migrate } from '../db/migrate.js';
import { createPool } from '../db/pool.js';
import { loadConfig } from '../runtime/config.js';
import { logger } from '../runtime/logger.js';
import { connectTemporal, ensureSearchAttributes } from '../runtime/temporal.js';
import { createWorker } from './create-worker.js';

export async function runWorker(opts: { databaseUrl: string; temporalAddress: string; namespace: string; taskQueue: string; signal?: AbortSignal }) {
  await migrate(opts.databaseUrl);
  const db = createPool(opts.databaseUrl);
  const { connection: clientConnection } = await connectTemporal(opts.temporalAddress, opts.namespace);
  await ensureSearchAttributes(clientConnection, opts.namespace);
  await clientConnection.close();
  const connection = await NativeConnection.connect({ address: opts.temporalAddress });
  const worker = await createWorker({ connection, namespace: opts.namespace, taskQueue: opts.taskQueue, deps: { db } });
  logger.info({ taskQueue: opts.taskQueue }, 'worker started');
  // The SDK already stops the worker on SIGINT/SIGTERM; the signal covers embedded use.
  opts.signal?.addEventListener('abort', () => {
    if (worker.getState() === 'RUNNING') worker.shutdown();
  });
  try {
    await worker.run();
  } finally {
    await connection.close();
    await db.end();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const config = loadConfig();
  if (!config.databaseUrl || !config.temporalAddress) {
    console.error('npm run worker needs DATABASE_URL and TEMPORAL_ADDRESS (npm start runs everything locally).');
    process.exit(2);
  }
  await runWorker({ databaseUrl: config.databaseUrl, temporalAddress: config.temporalAddress, namespace: config.temporalNamespace, taskQueue: config.taskQueue });
}
