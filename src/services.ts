/**
 * The start-up the API and the worker share: configuration checks for a production entry point,
 * the migrated database, the Temporal client, the destination policy, the HTTP client for
 * receivers and the secret box, closed again in one call.
 */
import type { Client, Connection } from '@temporalio/client';
import { ensurePartitionsAhead } from './db/delivery-partitions.js';
import { migrate } from './db/migrate.js';
import { createPool, warmConnections, type Db, type DbClient } from './db/pool.js';
import { writePayloadsAs } from './db/payload-bytes.js';
import { createHttpClient, type HttpClient } from './delivery/http-client.js';
import { loadConfig, type Config } from './runtime/config.js';
import { logger } from './runtime/logger.js';
import { createDestinationPolicy, type DestinationPolicy, type Resolver } from './security/destination-policy.js';
import { createSecretBox, loadOrCreateEncryptionKey, type SecretBox } from './security/secret-box.js';
import { connectTemporal } from './delivery/workflow-client.js';

export type ServiceConfig = Config & { databaseUrl: string; temporalAddress: string };

export interface Services {
  db: Db;
  temporal: { connection: Connection; client: Client };
  policy: DestinationPolicy;
  httpClient: HttpClient;
  secretBox: SecretBox;
  /** Closes the HTTP client, the Temporal connection and the pool (after the caller's own parts). */
  close(): Promise<void>;
}

/** Connections each process opens at start and keeps (`warmConnections`): about what a burst of 16 requests keeps busy. */
const WARM_CONNECTIONS = 6;

/**
 * Migrates, then opens what both processes use. `prepare` runs on each warmed connection (the
 * worker prepares its claim there).
 */
export async function startServices(
  config: ServiceConfig,
  opts: { resolver?: Resolver; prepare?: (client: DbClient) => Promise<void> } = {},
): Promise<Services> {
  await migrate(config.databaseUrl);
  writePayloadsAs(config.payloadCompression);
  const db = createPool(config.databaseUrl, 20, WARM_CONNECTIONS);
  // Inserts need this week's partition: made here too, so a paused maintenance Schedule never stops them.
  await ensurePartitionsAhead(db, Date.now());
  await warmConnections(db, WARM_CONNECTIONS, opts.prepare);
  const temporal = await connectTemporal(config.temporalAddress, config.temporalNamespace);
  const policy = createDestinationPolicy({ allowCidrs: config.allowPrivateCidrs, resolver: opts.resolver });
  const httpClient = createHttpClient({ policy, timeoutMs: config.deliveryTimeoutMs, devCaFile: config.devCaFile });
  return {
    db,
    temporal,
    policy,
    httpClient,
    secretBox: createSecretBox(loadOrCreateEncryptionKey(config.encryptionKey, config.dataDir)),
    async close() {
      await httpClient.close();
      await temporal.connection.close();
      await db.end();
    },
  };
}

/** The configuration of a production entry point (`npm run api`, `npm run worker`); exits 2 without a database or Temporal. */
export function loadServiceConfig(command: string): ServiceConfig {
  const config = loadConfig();
  if (!config.databaseUrl || !config.temporalAddress) {
    console.error(`${command} needs DATABASE_URL and TEMPORAL_ADDRESS (npm start runs everything locally).`);
    process.exit(2);
  }
  if (config.devMode)
    logger.warn(
      { allowPrivateCidrs: config.allowPrivateCidrs, devCaFile: config.devCaFile },
      'WEBHOOKS_DEV_MODE is on: loopback receivers allowed; never in production',
    );
  return { ...config, databaseUrl: config.databaseUrl, temporalAddress: config.temporalAddress };
}
