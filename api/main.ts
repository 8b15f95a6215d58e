/** Production API process: serves the REST API against DATABASE_URL and TEMPORAL_ADDRESS. */
import { loadConfig } from '../runtime/config.js';
import { logger } from '../runtime/logger.js';
import { startApi } from './server.js';

const config = loadConfig();
if (!config.databaseUrl || !config.temporalAddress) {
  console.error('npm run api needs DATABASE_URL and TEMPORAL_ADDRESS (npm start runs everything locally).');
  process.exit(2);
}
if (config.devMode)
  logger.warn(
    { allowPrivateCidrs: config.allowPrivateCidrs, devCaFile: config.devCaFile },
    'WEBHOOKS_DEV_MODE is on: loopback receivers allowed; never in production',
  );
const api = await startApi({ ...config, databaseUrl: config.databaseUrl, temporalAddress: config.temporalAddress });
logger.info({ url: api.url }, 'api listening');
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    void api.close().then(() => process.exit(0));
  });
}
