/**
 * Indexes added to the partitioned delivery tables after they hold data. A migration creates such
 * an index `ON ONLY` the parent: at once, without locking writes, and invalid until every
 * partition has one attached. Partitions created from then on get theirs when they are attached
 * (create_delivery_partitions); the maintenance run builds the rest here, one partition at a time
 * with CREATE INDEX CONCURRENTLY (which a migration, run in a transaction, cannot use), and
 * attaches each. Once the last is attached, Postgres marks the parent's index valid.
 */
import { partitionIndexName, partitionIndexStatement } from '../core/delivery-partitions.js';
import { PARTITIONED_TABLES } from './delivery-partitions.js';
import { inTransaction, withClient, type Db, type Queryable } from './pool.js';

/** Session lock key of index work on the delivery tables (withIndexBuildLock). */
const BUILD_LOCK = 'partition-indexes';

/**
 * Parent indexes a later migration replaced, and their replacements (migration 0035: the audit
 * list's indexes by endpoint in ascending order). A replaced index is built no further and goes
 * once its replacement is valid.
 */
export const REPLACED_INDEXES: Readonly<Record<string, string>> = {
  deliveries_endpoint_page: 'deliveries_endpoint_list',
  deliveries_endpoint_status_page: 'deliveries_endpoint_status_list',
};
/**
 * How long a drop waits for the table's lock. DROP INDEX of a partitioned index locks the table and
 * its partitions: waiting behind a long statement, it would hold up every delivery's write queued
 * behind it. Given up instead, and tried again by the next run.
 */
const DROP_LOCK_TIMEOUT = '200ms';
const LOCK_NOT_AVAILABLE = '55P03';

export interface PartitionIndexToBuild {
  /** The parent's index, as created ON ONLY by a migration. */
  parentIndex: string;
  partition: string;
  /** The partition's index name: the partition's name and what follows the parent table's in the parent index's. */
  name: string;
  /** CREATE INDEX CONCURRENTLY of it, from the parent index's definition. */
  create: string;
}

/** The partitions that lack their index of a parent index still invalid, in partition order. */
export async function partitionIndexesToBuild(db: Queryable): Promise<PartitionIndexToBuild[]> {
  const { rows } = await db.query<{ parent_index: string; parent: string; def: string; partition: string }>(
    `SELECT pc.relname AS parent_index, t.relname AS parent, pg_get_indexdef(pi.indexrelid) AS def, p.relname AS partition
     FROM pg_index pi
     JOIN pg_class pc ON pc.oid = pi.indexrelid AND pc.relkind = 'I'
     JOIN pg_class t ON t.oid = pi.indrelid
     JOIN pg_inherits i ON i.inhparent = pi.indrelid AND NOT i.inhdetachpending
     JOIN pg_class p ON p.oid = i.inhrelid
     WHERE t.relname = ANY($1::text[]) AND NOT pi.indisvalid AND NOT pc.relname = ANY($2::text[])
       AND NOT EXISTS (SELECT 1 FROM pg_inherits ii JOIN pg_index x ON x.indexrelid = ii.inhrelid
                       WHERE ii.inhparent = pi.indexrelid AND x.indrelid = p.oid)
     ORDER BY pc.relname, p.relname`,
    [[...PARTITIONED_TABLES], Object.keys(REPLACED_INDEXES)],
  );
  return rows.map((r) => {
    const name = partitionIndexName(r.parent_index, r.parent, r.partition);
    return { parentIndex: r.parent_index, partition: r.partition, name, create: partitionIndexStatement(r.def, name, r.partition) };
  });
}

/**
 * Builds and attaches every missing partition index; returns the names built. When another
 * process is building (it holds the lock), returns at once with nothing: it will finish them.
 * An index left by a build that was interrupted is invalid: it is dropped and built again.
 */
export async function buildPartitionIndexes(db: Db): Promise<string[]> {
  if ((await partitionIndexesToBuild(db)).length === 0) return [];
  const built = await withIndexBuildLock(db, async (client) => {
    const names: string[] = [];
    // Read again under the lock, on the connection that holds it (a second checkout could wait on
    // a pool this one fills): a build that held the lock may have attached some meanwhile.
    for (const job of await partitionIndexesToBuild(client)) {
      const { rows: found } = await client.query<{ valid: boolean }>(
        `SELECT x.indisvalid AS valid FROM pg_class c JOIN pg_index x ON x.indexrelid = c.oid WHERE c.relname = $1`,
        [job.name],
      );
      if (found[0] && !found[0].valid) await client.query(`DROP INDEX CONCURRENTLY "${job.name}"`);
      if (!found[0]?.valid) await client.query(job.create);
      await client.query(`ALTER INDEX "${job.parentIndex}" ATTACH PARTITION "${job.name}"`);
      names.push(job.name);
    }
    return names;
  });
  return built ?? [];
}

/**
 * Runs `fn` on a connection holding the session lock of index work on the delivery tables (builds
 * and compactions: one at a time per database, whichever worker or deployment runs maintenance),
 * with no statement timeout (a build reads the whole partition). Undefined, at once, when another
 * process holds it: that one does the work.
 */
export async function withIndexBuildLock<T>(db: Db, fn: (client: Queryable) => Promise<T>): Promise<T | undefined> {
  return withClient(db, async (client) => {
    const { rows } = await client.query<{ locked: boolean }>(`SELECT pg_try_advisory_lock(hashtext($1)) AS locked`, [BUILD_LOCK]);
    if (!rows[0]!.locked) return undefined;
    try {
      await client.query(`SET statement_timeout = 0`);
      return await fn(client);
    } finally {
      // A connection lost meanwhile took its lock with it (withClient then discards it).
      await client.query(`RESET statement_timeout`);
      await client.query(`SELECT pg_advisory_unlock(hashtext($1))`, [BUILD_LOCK]);
    }
  });
}

/**
 * Drops each replaced index (REPLACED_INDEXES) whose replacement is valid; returns the names
 * dropped. One that cannot have the table's lock within DROP_LOCK_TIMEOUT is left to the next run.
 */
export async function dropReplacedIndexes(db: Db): Promise<string[]> {
  const { rows } = await db.query<{ replaced: string }>(
    `SELECT r.replaced FROM unnest($1::text[], $2::text[]) AS r(replaced, replacement)
     JOIN pg_class old ON old.relname = r.replaced AND old.relkind IN ('I', 'i')
     JOIN pg_index x ON x.indexrelid = to_regclass(r.replacement) AND x.indisvalid`,
    [Object.keys(REPLACED_INDEXES), Object.values(REPLACED_INDEXES)],
  );
  const dropped: string[] = [];
  for (const { replaced } of rows) {
    try {
      await inTransaction(db, async (tx) => {
        await tx.query(`SET LOCAL lock_timeout = '${DROP_LOCK_TIMEOUT}'`);
        await tx.query(`DROP INDEX IF EXISTS "${replaced}"`);
      });
      dropped.push(replaced);
    } catch (err) {
      if ((err as { code?: string }).code !== LOCK_NOT_AVAILABLE) throw err;
    }
  }
  return dropped;
}
