/** The Postgres server's own catalog: which databases exist (the production shape creates Temporal's when missing). */
import pg from 'pg';

/** True when the server at `databaseUrl` has a database called `name`. */
export async function databaseExists(databaseUrl: string, name: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    return rowCount === 1;
  } finally {
    await client.end();
  }
}
