/**
 * A session-level advisory lock held on a connection of its own for as long as the process lives:
 * Postgres releases it when the connection goes (the process died, the network dropped it), and
 * another process's next try takes it. A process without it tries again every `retryMs`. Every
 * process trying for it is also a member (a shared lock on a second key), so the holder can tell
 * whether anyone else would take over: a lone process has no reason to step aside. The holder can
 * also raise a flag (a third key, held on the same connection) that the others see at their next
 * look, with whether another process holds the lock at all.
 */
import pg from 'pg';
import { logger } from '../runtime/logger.js';

export interface HeldLock {
  /** True while this process holds the lock (as of its last answer from Postgres). */
  held(): boolean;
  /** The processes trying for the lock or holding it, this one included (as of the last look, every `retryMs`). */
  members(): number;
  /**
   * What another process holding the lock shows (as of the last look): its flag, and how long its
   * lock's connection had run no statement (its looks run every `retryMs`: a process whose event
   * loop is stuck goes quiet). None when no other process holds it.
   */
  otherHolder(): { flagged: boolean; quietMs: number } | null;
  /** Raises or lowers this process's flag, shown while it holds the lock (the others see it at their next look). */
  flag(up: boolean): void;
  /** Resolves once the first try is answered (or failed). */
  ready: Promise<void>;
  close(): Promise<void>;
}

/**
 * Of the advisory locks on the three keys, in this database: the members, and whether a process
 * other than this one holds the lock and its flag. A bigint key is split over classid and objid.
 */
const LOOK = `SELECT count(*) FILTER (WHERE l.mode = 'ShareLock' AND k.role = 'members')::int AS members,
    coalesce(bool_or(k.role = 'lock' AND l.mode = 'ExclusiveLock' AND l.pid <> pg_backend_pid()), false) AS held_elsewhere,
    coalesce(bool_or(k.role = 'flag' AND l.mode = 'ExclusiveLock' AND l.pid <> pg_backend_pid()), false) AS flagged_elsewhere,
    max(CASE WHEN k.role = 'lock' AND l.mode = 'ExclusiveLock' AND l.pid <> pg_backend_pid() THEN
      (SELECT extract(epoch FROM clock_timestamp() - coalesce(a.query_start, a.backend_start)) * 1000 FROM pg_stat_activity a WHERE a.pid = l.pid)
    END)::float8 AS holder_quiet_ms
  FROM pg_locks l
  JOIN (VALUES ('lock', hashtextextended($1, 0)), ('members', hashtextextended($2, 0)), ('flag', hashtextextended($3, 0))) AS k(role, key)
    ON l.classid = ((k.key >> 32) & 4294967295)::oid AND l.objid = (k.key & 4294967295)::oid
  WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
    AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())`;

/** Takes or gives back the flag's lock on `c`; returns whether it is held. */
async function setFlag(c: pg.Client, key: string, up: boolean): Promise<boolean> {
  await c.query(up ? `SELECT pg_advisory_lock(hashtextextended($1, 0))` : `SELECT pg_advisory_unlock(hashtextextended($1, 0))`, [key]);
  return up;
}

async function look(c: pg.Client, keys: [lock: string, members: string, flag: string]) {
  // Prepared once per connection: a look every 2 s in every worker was planned every time (0.4 ms of Postgres each).
  const { rows } = await c.query<{ members: number; held_elsewhere: boolean; flagged_elsewhere: boolean; holder_quiet_ms: number | null }>({
    name: 'look_advisory_lock',
    text: LOOK,
    values: keys,
  });
  const r = rows[0]!;
  return { members: r.members, other: r.held_elsewhere ? { flagged: r.flagged_elsewhere, quietMs: r.holder_quiet_ms ?? 0 } : null };
}

export function keepTryingForLock(o: {
  databaseUrl: string;
  name: string;
  retryMs: number;
  /** Called each time this process takes the lock (it had not held it before). */
  onTaken?: () => void;
}): HeldLock {
  const memberKey = `${o.name} members`;
  const flagKey = `${o.name} flag`;
  let holder = false;
  let members = 1;
  let other: { flagged: boolean; quietMs: number } | null = null;
  /** The flag as asked for, and as Postgres holds it on `client`. */
  let flagWanted = false;
  let flagHeld = false;
  let closed = false;
  let client: pg.Client | null = null;

  // The locks go with their connection: a dropped one leaves this process a non-holder, trying again.
  const drop = (c: pg.Client) => {
    if (client !== c) return;
    client = null;
    holder = false;
    flagHeld = false;
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
        if (holder) {
          logger.info({ lock: o.name }, 'advisory lock taken');
          o.onTaken?.();
        }
      }
      // Held while this process holds the lock and wants it up.
      const want = flagWanted && holder;
      if (want !== flagHeld) flagHeld = await setFlag(client, flagKey, want);
      ({ members, other } = await look(client, [o.name, memberKey, flagKey]));
    } catch (err) {
      logger.debug({ err, lock: o.name }, 'advisory lock not asked; trying again');
      other = null;
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
    otherHolder: () => other,
    flag(up) {
      if (up === flagWanted) return;
      flagWanted = up;
      // A try of its own, after the one in flight (which may have settled the flag before this).
      void (trying ?? Promise.resolve()).then(() => (closed ? undefined : tryNow()));
    },
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
