import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { runner } from 'node-pg-migrate';

const migrationsDir = path.join(path.dirname(fileURLToPath(import.meta.url)), 'migrations');

/**
 * Applies pending migrations. node-pg-migrate holds a Postgres advisory lock while it
 * runs, and `wait` makes a second process queue behind the first instead of failing,
 * so the API and the worker can both migrate at start.
 */
export async function migrate(databaseUrl: string): Promise<void> {
  await runner({
    databaseUrl,
    dir: migrationsDir,
    direction: 'up',
    migrationsTable: 'schema_migrations',
    advisoryLockMode: 'wait',
    checkOrder: true,
    log: () => {},
  });
}
