/**
 * Compaction of a week of deliveries once it is written no more (partitionsToCompact): its
 * indexes rebuilt with REINDEX CONCURRENTLY (reads and writes go on), which packs them to their
 * fillfactor. While the week was written, each recorded outcome (an update no index can skip:
 * it changes the status) left a second entry in every index; VACUUM removed the dead ones, but
 * their pages stay half empty, as new entries go to the indexes' right edges. Heaps are not
 * rewritten (that would lock them); their free space goes to the week's own later updates.
 */
import { partitionsToCompact } from '../core/delivery-partitions.js';
import { listPartitions } from './delivery-partitions.js';
import { withIndexBuildLock } from './partition-indexes.js';
import type { Db, Queryable } from './pool.js';

export interface Compaction {
  partition: string;
  indexBytesBefore: number;
  indexBytesAfter: number;
}

const indexBytes = async (db: Queryable, partition: string) =>
  Number((await db.query<{ bytes: string }>(`SELECT pg_indexes_size($1::regclass) AS bytes`, [`"${partition}"`])).rows[0]!.bytes);

/**
 * Compacts the week due first, if any; undefined when none is due or another process holds the
 * lock of index work. One week a run: each reads its whole partition.
 */
export async function compactClosedPartition(db: Db, nowMs: number): Promise<Compaction | undefined> {
  const { rows: done } = await db.query<{ partition: string }>(`SELECT partition FROM delivery_partition_compactions`);
  const [due] = partitionsToCompact(await listPartitions(db, 'deliveries'), new Set(done.map((r) => r.partition)), nowMs);
  if (!due) return undefined;
  return withIndexBuildLock(db, async (client) => {
    // What an interrupted REINDEX CONCURRENTLY leaves: its new indexes, invalid, named *_ccnew*.
    const { rows: leftovers } = await client.query<{ name: string }>(
      `SELECT c.relname AS name FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid
       WHERE x.indrelid = $1::regclass AND NOT x.indisvalid AND c.relname LIKE '%\\_ccnew%'`,
      [`"${due.name}"`],
    );
    for (const { name } of leftovers) await client.query(`DROP INDEX CONCURRENTLY "${name}"`);
    const indexBytesBefore = await indexBytes(client, due.name);
    await client.query(`REINDEX TABLE CONCURRENTLY "${due.name}"`);
    const indexBytesAfter = await indexBytes(client, due.name);
    await client.query(
      `INSERT INTO delivery_partition_compactions (partition, index_bytes_before, index_bytes_after) VALUES ($1, $2, $3)
       ON CONFLICT (partition) DO UPDATE SET compacted_at = now(), index_bytes_before = $2, index_bytes_after = $3`,
      [due.name, indexBytesBefore, indexBytesAfter],
    );
    return { partition: due.name, indexBytesBefore, indexBytesAfter };
  });
}

/** Forgets the compactions of weeks dropped with their retention. */
export async function forgetCompactions(db: Queryable, partitions: readonly string[]): Promise<void> {
  if (partitions.length) await db.query(`DELETE FROM delivery_partition_compactions WHERE partition = ANY($1::text[])`, [partitions]);
}
