/** Production API process: serves the REST API against DATABASE_URL and TEMPORAL_ADDRESS, on HOST (every interface when unset). */
import { loadServiceConfig } from '../services.js';
import { logger } from '../runtime/logger.js';
import { startApi } from './server.js';

const api = await startApi(loadServiceConfig('npm run api'));
logger.info({ url: api.url }, 'api listening');
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    void api.close().then(() => process.exit(0));
  });
}
