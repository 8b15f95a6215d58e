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
import { withClient, type Db, type Queryable } from './pool.js';

/** Session lock key: one build at a time per database, whichever worker or deployment runs maintenance. */
const BUILD_LOCK = 'partition-indexes';

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
     WHERE t.relname = ANY($1::text[]) AND NOT pi.indisvalid
       AND NOT EXISTS (SELECT 1 FROM pg_inherits ii JOIN pg_index x ON x.indexrelid = ii.inhrelid
                       WHERE ii.inhparent = pi.indexrelid AND x.indrelid = p.oid)
     ORDER BY pc.relname, p.relname`,
    [[...PARTITIONED_TABLES]],
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
  return withClient(db, async (client) => {
    const { rows } = await client.query<{ locked: boolean }>(`SELECT pg_try_advisory_lock(hashtext($1)) AS locked`, [BUILD_LOCK]);
    if (!rows[0]!.locked) return [];
    try {
      // A build reads the whole partition: no statement timeout of the pool's applies to it.
      await client.query(`SET statement_timeout = 0`);
      const built: string[] = [];
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
        built.push(job.name);
      }
      return built;
    } finally {
      // A connection lost meanwhile took its lock with it (withClient then discards it).
      await client.query(`RESET statement_timeout`);
      await client.query(`SELECT pg_advisory_unlock(hashtext($1))`, [BUILD_LOCK]);
    }
  });
}
