/**
 * A session-level advisory lock held on a connection of its own for as long as the process lives:
 * Postgres releases it when the connection goes (the process died, the network dropped it), and
 * another process's next try takes it. A process without it tries again every `retryMs`.
 */
import pg from 'pg';
import { logger } from '../runtime/logger.js';

export interface HeldLock {
  /** True while this process holds the lock (as of its last answer from Postgres). */
  held(): boolean;
  /** Resolves once the first try is answered (or failed). */
  ready: Promise<void>;
  close(): Promise<void>;
}

export function keepTryingForLock(o: { databaseUrl: string; name: string; retryMs: number }): HeldLock {
  let holder = false;
  let closed = false;
  let client: pg.Client | null = null;

  // The lock goes with its connection: a dropped one leaves this process a non-holder, trying again.
  const drop = (c: pg.Client) => {
    if (client !== c) return;
    client = null;
    holder = false;
    c.end().catch(() => {});
  };

  async function tryOnce(): Promise<void> {
    try {
      if (!client) {
        const c = new pg.Client({ connectionString: o.databaseUrl, keepAlive: true, keepAliveInitialDelayMillis: 10_000 });
        c.on('error', () => drop(c));
        c.on('end', () => drop(c));
        await c.connect();
        if (closed) return void (await c.end());
        client = c;
      }
      const { rows } = await client.query<{ got: boolean }>(`SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS got`, [o.name]);
      holder = rows[0]!.got;
      if (holder) logger.info({ lock: o.name }, 'advisory lock taken');
    } catch (err) {
      logger.debug({ err, lock: o.name }, 'advisory lock not asked; trying again');
      if (client) drop(client);
    }
  }

  let trying: Promise<void> | null = null;
  const tryNow = () => (trying ??= tryOnce().finally(() => (trying = null)));
  const retry = setInterval(() => {
    if (!holder && !closed) void tryNow();
  }, o.retryMs);
  retry.unref();

  return {
    held: () => holder,
    ready: tryNow(),
    async close() {
      closed = true;
      clearInterval(retry);
      await trying;
      const c = client;
      client = null;
      holder = false;
      await c?.end().catch(() => {});
    },
  };
}
