/**
 * A session-level advisory lock held on a connection of its own for as long as the process lives:
 * Postgres releases it when the connection goes (the process died, the network dropped it), and
 * another process's next try takes it. A process without it tries again every `retryMs`. Every
 * process trying for it is also a member (a shared lock on a second key), so the holder can tell
 * whether anyone else would take over: a lone process has no reason to step aside.
 */
import pg from 'pg';
import { logger } from '../runtime/logger.js';

export interface HeldLock {
  /** True while this process holds the lock (as of its last answer from Postgres). */
  held(): boolean;
  /** The processes trying for the lock or holding it, this one included (as of the last look, every `retryMs`). */
  members(): number;
  /** Resolves once the first try is answered (or failed). */
  ready: Promise<void>;
  close(): Promise<void>;
}

/** The processes holding the shared lock on `key`, in this database. */
const MEMBERS = `SELECT count(*)::int AS n FROM pg_locks l, (SELECT hashtextextended($1, 0) AS k) key
  WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
    AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
    AND l.classid = ((key.k >> 32) & 4294967295)::oid AND l.objid = (key.k & 4294967295)::oid`;

export function keepTryingForLock(o: { databaseUrl: string; name: string; retryMs: number }): HeldLock {
  const memberKey = `${o.name} members`;
  let holder = false;
  let members = 1;
  let closed = false;
  let client: pg.Client | null = null;

  // The locks go with their connection: a dropped one leaves this process a non-holder, trying again.
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
        // Kept before its first statement: a statement that fails drops (and closes) it below.
        client = c;
        await c.query(`SELECT pg_advisory_lock_shared(hashtextextended($1, 0))`, [memberKey]);
      }
      if (!holder) {
        const { rows } = await client.query<{ got: boolean }>(`SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS got`, [o.name]);
        holder = rows[0]!.got;
        if (holder) logger.info({ lock: o.name }, 'advisory lock taken');
      }
      members = (await client.query<{ n: number }>(MEMBERS, [memberKey])).rows[0]!.n;
    } catch (err) {
      logger.debug({ err, lock: o.name }, 'advisory lock not asked; trying again');
      if (client) drop(client);
    }
  }

  let trying: Promise<void> | null = null;
  const tryNow = () => (trying ??= tryOnce().finally(() => (trying = null)));
  const retry = setInterval(() => {
    if (!closed) void tryNow();
  }, o.retryMs);
  retry.unref();

  return {
    held: () => holder,
    members: () => members,
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
