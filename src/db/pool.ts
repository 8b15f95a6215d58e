import pg from 'pg';
import { logger } from '../runtime/logger.js';

// Timestamps come back as Date, bigints (stream cursors) as strings: the API renders cursors as strings anyway.
export type Db = pg.Pool;
export type Queryable = pg.Pool | pg.PoolClient;
/** A connection checked out of a pool (withClient): what a transaction runs on. */
export type DbClient = pg.PoolClient;

/** How long a checkout waits for a connection: with the server down or the pool drained, callers get an error, never a hang. */
const CONNECT_TIMEOUT_MS = 5_000;
/** How long a connection above the pool's `min` stays open unused. */
const IDLE_TIMEOUT_MS = 10 * 60_000;

/** Pools made `withoutSorts`: their connections plan every statement with enable_sort off. */
const sortless = new WeakSet<Db>();

/**
 * `withoutSorts`: each connection starts with enable_sort off, for statements that need sorts
 * priced out of their plans (the audit list: src/db/deliveries.ts) without a SET and a RESET
 * around each, two round trips more. Only for those statements: a pool of their own.
 */
export function createPool(url: string, max = 10, min = 0, opts: { withoutSorts?: boolean } = {}): Db {
  const { connectionString, options } = opts.withoutSorts ? withOption(url, '-c enable_sort=off') : { connectionString: url };
  const pool = new pg.Pool({
    connectionString,
    options,
    max,
    // Connections opened by `warmConnections` stay: the first burst of traffic finds them ready.
    min,
    // A connection a burst opened is kept through the lulls between bursts: a new backend plans its
    // first statements on the partitioned tables with their descriptors and statistics not yet
    // loaded, which each burst after a 30 s lull paid again on every connection it reopened
    // (bench:scale: the due-time read planned in 3.7 ms a call after a minute's lull, 0.6 ms warm).
    idleTimeoutMillis: IDLE_TIMEOUT_MS,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    // A server that vanished without closing its sockets (host lost, network cut) is found out by TCP keepalives.
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
  });
  // An idle client losing its connection (server restart, failover) emits 'error' through the pool; unheard, it
  // would kill the process. The pool has already dropped that client and the next checkout reconnects.
  pool.on('error', (err) => logger.warn({ err: brief(err) }, 'idle Postgres connection lost'));
  if (opts.withoutSorts) sortless.add(pool);
  return pool;
}

/**
 * `url` with `option` added to its startup options. Options a URL gives (`?options=-c ...`) take
 * precedence over an `options` given beside it in pg, so they are extended in the URL itself.
 */
function withOption(url: string, option: string): { connectionString: string; options?: string } {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    // Not a URL (a socket path): it carries no options.
    return { connectionString: url, options: option };
  }
  const given = parsed.searchParams.get('options');
  parsed.searchParams.set('options', given ? `${given} ${option}` : option);
  return { connectionString: parsed.toString() };
}

/** Whether `db` is a pool whose connections plan without sorts (createPool's `withoutSorts`). */
export const plansWithoutSorts = (db: Queryable): boolean => db instanceof pg.Pool && sortless.has(db);

/** What a lost connection's error says: pg's errors can carry the whole client, which would flood one log line. */
function brief(err: Error): { message: string; code?: string } {
  return { message: err.message, code: (err as { code?: string }).code };
}

/**
 * The one way to check a client out of the pool. pg emits 'error' on a checked-out client whose
 * connection dies, and nobody else listens to it then: an unheard 'error' event kills the process.
 * So the checkout listens for its whole duration, and a client that broke is released with its
 * error, which makes the pool discard it instead of handing it to the next caller.
 */
export async function withClient<T>(db: Db, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await db.connect();
  let broken: Error | undefined;
  const onError = (err: Error) => {
    // A dying connection can report twice (the server's FATAL, then the socket closing): log the cause once.
    if (!broken) logger.warn({ err: brief(err) }, 'Postgres connection lost while checked out');
    broken ??= err;
  };
  client.on('error', onError);
  try {
    return await fn(client);
  } catch (err) {
    if (isDatabaseUnavailable(err)) broken ??= err as Error;
    throw err;
  } finally {
    // Synchronous with the release, which puts the pool's own idle listener back.
    client.removeListener('error', onError);
    client.release(broken);
  }
}

/**
 * Opens `count` connections at once and has each read the delivery tables, so a burst after start
 * finds them open and their backends' caches of the weekly partitions and indexes loaded: a new
 * connection costs a backend start and authentication, and its first statement on a partitioned
 * table loads every partition's descriptors, together tens of milliseconds, which the first
 * deliveries after a start used to wait for. Statements that `prepare` names are prepared on each.
 */
export async function warmConnections(
  db: Db,
  count: number,
  prepare: (client: pg.PoolClient) => Promise<void> = async () => {},
): Promise<void> {
  const clients = await Promise.all(Array.from({ length: count }, () => db.connect()));
  await Promise.all(
    clients.map(async (client) => {
      let broken: Error | undefined;
      try {
        await client.query(WARM_READ, [NIL_UUID]);
        await prepare(client);
      } catch (err) {
        broken = err as Error;
        logger.warn({ err: brief(broken) }, 'a connection was not warmed up; it is opened again when needed');
      } finally {
        client.release(broken);
      }
    }),
  );
}

/** An id no row has: warm-up statements run with it find nothing and change nothing. */
export const NIL_UUID = '00000000-0000-0000-0000-000000000000';
/** Plans over every partition of the hot tables (no partition key in it), finding no row. */
const WARM_READ = `SELECT (SELECT 1 FROM deliveries WHERE endpoint_id = $1 LIMIT 1),
  (SELECT 1 FROM delivery_attempts WHERE delivery_id = $1 LIMIT 1), (SELECT 1 FROM events WHERE id = $1)`;

/** One round trip to the server: is the database answering? */
export async function pingDatabase(db: Queryable): Promise<void> {
  await db.query('SELECT 1');
}

/** Runs `fn` in a transaction, rolling back on any error. */
export function inTransaction<T>(db: Db, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  return withClient(db, (client) => transactionOn(client, fn));
}

/** What a transaction's body decided: commit with its value, or roll back saying why. */
export type Decided<T, R> = { commit: T } | { rollback: R };

/** A transaction on a client already checked out (withClient) whose body may also roll back without an exception: the answer says which it did. */
export async function decidedTransactionOn<T, R>(
  client: pg.PoolClient,
  fn: (client: pg.PoolClient) => Promise<Decided<T, R>>,
): Promise<Decided<T, R>> {
  await client.query('BEGIN');
  try {
    const decided = await fn(client);
    await client.query('commit' in decided ? 'COMMIT' : 'ROLLBACK');
    return decided;
  } catch (err) {
    // ROLLBACK only fails on a dead connection, and withClient discards that client.
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  }
}

/** inTransaction on a client already checked out (withClient), for a caller that also runs statements outside it. */
export async function transactionOn<T>(client: pg.PoolClient, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  // A body that only commits (it never decides to roll back): every error rolls back.
  const decided = await decidedTransactionOn<T, never>(client, async (c) => ({ commit: await fn(c) }));
  return 'commit' in decided ? decided.commit : decided.rollback;
}

// Socket and DNS failures reaching the server (DNS: a stopped container's name disappears).
const UNAVAILABLE_ERRNO = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);
// admin_shutdown, crash_shutdown, cannot_connect_now, too_many_connections; class 08 is checked by prefix.
const UNAVAILABLE_SQLSTATE = new Set(['57P01', '57P02', '57P03', '53300']);
// pg's and pg-pool's own errors carry no code, only these messages.
const UNAVAILABLE_MESSAGE =
  /^(Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Client was closed and is not queryable)/;

/**
 * True when `err` says Postgres cannot be reached or dropped the connection, as opposed to an
 * error in the SQL or the data: the caller should answer "try again later", not "bug".
 */
export function isDatabaseUnavailable(err: unknown, depth = 0): boolean {
  if (!(err instanceof Error) || depth > 4) return false;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' && (UNAVAILABLE_ERRNO.has(code) || UNAVAILABLE_SQLSTATE.has(code) || /^08[0-9A-Z]{3}$/.test(code)))
    return true;
  if (UNAVAILABLE_MESSAGE.test(err.message)) return true;
  // Node reports a refused connection to every address of a name as one AggregateError.
  if (err instanceof AggregateError && err.errors.some((e) => isDatabaseUnavailable(e, depth + 1))) return true;
  return isDatabaseUnavailable(err.cause, depth + 1);
}
