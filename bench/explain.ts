/**
 * Diagnosis for bench/run.ts --explain: EXPLAIN ANALYZE of the statements a delivery and an
 * ingested event cost, run through the real query functions of db/ (a client that prefixes
 * EXPLAIN, inside a transaction that is rolled back), and a few timed what-ifs.
 */
import fs from 'node:fs';
import type { PoolClient } from 'pg';
import type { EventDefinition } from '../src/core/catalog/index.js';
import {
  claimWithEndpoint,
  insertEventDeliveries,
  nextDueAtFor,
  recordDeliveryAttempts,
  type AttemptResult,
} from '../src/db/deliveries.js';
import { listRoutableEndpoints } from '../src/db/endpoints.js';
import { appendEvent } from '../src/db/events.js';
import { createPool, inTransaction, type Db, type Queryable } from '../src/db/pool.js';
import { ingestEvent, storeEvent } from '../src/events/store-event.js';

export interface Plan {
  planningMs: number;
  executionMs: number;
  plan: string;
}

/** A Queryable whose statements are EXPLAIN ANALYZEd (so also executed) and answer no rows. */
export function explaining(client: PoolClient, into: Plan[]): Queryable {
  return {
    // Hot statements come as prepared-statement configs ({ name, text, values }): the name is dropped,
    // since the EXPLAIN of a statement is another statement.
    async query(statement: string | { text: string; values?: unknown[] }, params?: unknown[]) {
      const { text, values } = typeof statement === 'string' ? { text: statement, values: params } : statement;
      const { rows } = await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN (ANALYZE, BUFFERS, WAL) ${text}`, values);
      const plan = rows.map((r) => r['QUERY PLAN']).join('\n');
      const num = (label: string) => Number(new RegExp(`${label}: ([\\d.]+) ms`).exec(plan)?.[1] ?? NaN);
      into.push({ planningMs: num('Planning Time'), executionMs: num('Execution Time'), plan });
      // One empty row: callers that read a row's fields get undefined, not a crash.
      return { rows: [{}], rowCount: 0 };
    },
  } as unknown as Queryable;
}

const ms = (t0: number) => performance.now() - t0;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
/** A 200 answered to attempt `number` of the delivery, as its claim read it (its id and week). */
export const success = ({ id, created_at }: { id: string; created_at: Date }, number = 1): AttemptResult => ({
  id,
  createdAt: created_at,
  number,
  attempt: { startedAt: new Date(), durationMs: 3, responseCode: 200, error: null, responseExcerpt: 'ok' },
  success: true,
  nextAttemptAt: null,
});

/** The stream row of a sample event with no origin chain, as ingest would append it. */
function originlessRow(
  ctx: { ingestAccountId: string; def: EventDefinition; makeData: (entityId: string) => Record<string, unknown> },
  entityId: string,
) {
  const data = ctx.def.data.parse(ctx.makeData(entityId));
  return {
    account_id: ctx.ingestAccountId,
    environment: 'live' as const,
    type: ctx.def.type,
    idempotency_key: ctx.def.idempotencyKey(data, {}),
    customer_id: null,
    channel: null,
    channel_account_id: null,
    channel_account: null,
    external_id: null,
    message_id: null,
    message_resource_id: null,
    contact_ref: null,
    contact_refs: [],
    data,
    contact_id: null,
    conversation_id: null,
    occurred_at: new Date(),
  };
}

export async function explainHotQueries(
  db: Db,
  databaseUrl: string,
  ctx: {
    ingestAccountId: string;
    ingestEndpointId: string;
    def: EventDefinition;
    makeData: (entityId: string) => Record<string, unknown>;
    file: string;
  },
) {
  const out: Record<string, unknown> = {};
  const report: string[] = [];
  const client = await db.connect();
  try {
    await client.query('BEGIN');
    // The second run of each is the one kept: the first warms caches and plans.
    const explain = async (name: string, run: (q: Queryable) => Promise<unknown>) => {
      let last: Plan | undefined;
      for (let i = 0; i < 2; i++) {
        const plans: Plan[] = [];
        await run(explaining(client, plans));
        last = plans[plans.length - 1];
      }
      out[name] = { planningMs: last!.planningMs, executionMs: last!.executionMs };
      report.push(`==== ${name}\n${last!.plan}\n`);
    };
    const key = `explain_${Date.now()}`;
    await explain('listRoutableEndpoints', (q) => listRoutableEndpoints(q, ctx.ingestAccountId));
    let n = 0;
    const row = () => originlessRow(ctx, `${key}_${n++}`);
    await explain('appendEvent', (q) => appendEvent(q, row()));
    const { rows: ev } = await client.query<{ id: string }>(`SELECT id FROM events WHERE account_id = $1 ORDER BY cursor DESC LIMIT 1`, [
      ctx.ingestAccountId,
    ]);
    const endpoints = await listRoutableEndpoints(client, ctx.ingestAccountId);
    let d = 0;
    await explain(`insertEventDeliveries (fan-out ${endpoints.length})`, (q) =>
      insertEventDeliveries(
        q,
        {
          accountId: ctx.ingestAccountId,
          eventId: ev[0]!.id,
          eventType: ctx.def.type,
          idempotencyKey: `${key}:d${d++}`,
          environment: 'live',
        },
        endpoints.map((e) => ({ endpointId: e.id, status: 'pending', held: false })),
      ),
    );
    const { rows: pending } = await client.query<{ id: string; event_id: string; created_at: Date }>(
      `SELECT id, event_id, created_at FROM deliveries WHERE endpoint_id = $1 AND status = 'pending' LIMIT 200`,
      [ctx.ingestEndpointId],
    );
    const { rows: backlog } = await client.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM deliveries WHERE endpoint_id = $1 AND status = 'pending'`,
      [ctx.ingestEndpointId],
    );
    out.claimBacklog = backlog[0]!.n;
    await explain(`claimWithEndpoint: deliveries with their events and the endpoint (32 of ${backlog[0]!.n} pending)`, (q) =>
      claimWithEndpoint(q, ctx.ingestEndpointId, new Date(), 32, 240_000, `explain-${d++}`),
    );
    let a = 0;
    await explain('recordDeliveryAttempts (1)', (q) => recordDeliveryAttempts(q, [success(pending[a++]!)]));
    await explain('recordDeliveryAttempts (64)', (q) =>
      recordDeliveryAttempts(
        q,
        pending.slice(a, (a += 64)).map((p) => success(p)),
      ),
    );
    await explain('nextDueAtFor', (q) => nextDueAtFor(q, [ctx.ingestEndpointId]));
    await client.query('ROLLBACK');
  } finally {
    client.release();
  }

  // A round trip with nothing to do: the floor under every statement.
  const rtt: number[] = [];
  for (let i = 0; i < 300; i++) {
    const t0 = performance.now();
    await db.query('SELECT 1');
    rtt.push(ms(t0));
  }
  out.roundTripMsP50 = +median(rtt).toFixed(3);

  // Recording attempts as the worker does (one autocommit statement each, 16 lanes): how many per second can the database take?
  const { rows: toRecord } = await db.query<{ id: string; created_at: Date }>(
    `SELECT id, created_at FROM deliveries WHERE endpoint_id = $1 AND status = 'pending' LIMIT 800`,
    [ctx.ingestEndpointId],
  );
  const recordRate = async (pool: Db, ids: { id: string; created_at: Date }[]) => {
    let next = 0;
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        for (let i = next++; i < ids.length; i = next++) {
          await recordDeliveryAttempts(pool, [success(ids[i]!)]);
        }
      }),
    );
    return Math.round(ids.length / (ms(t0) / 1000));
  };
  // The same work with commits that do not wait for the WAL flush: how much of it is fsync.
  const asyncUrl = new URL(databaseUrl);
  asyncUrl.searchParams.set('options', '-c synchronous_commit=off');
  const asyncDb = createPool(asyncUrl.toString(), 18);
  try {
    out.recordAttemptsPerSecond = await recordRate(db, toRecord.slice(0, 400));
    out.recordAttemptsPerSecondAsyncCommit = await recordRate(asyncDb, toRecord.slice(400));

    // Ingest what-ifs with fan-out as in the ingest phase: as today (group commit: 16 writers share
    // transactions), without waiting for fsync, and N events per transaction with a statement per event.
    const ingestRate = async (pool: Db, tag: string, count: number, writers = 16) => {
      let next = 0;
      const t0 = performance.now();
      await Promise.all(
        Array.from({ length: writers }, async () => {
          for (let i = next++; i < count; i = next++) {
            const data = ctx.def.data.parse(ctx.makeData(`${tag}_${i}`));
            await storeEvent(pool, ingestEvent({ accountId: ctx.ingestAccountId, environment: 'live', def: ctx.def, data }));
          }
        }),
      );
      return Math.round(count / (ms(t0) / 1000));
    };
    const tag = `whatif_${Date.now()}`;
    out.ingestPerSecond = await ingestRate(db, `${tag}_sync`, 1000);
    out.ingestPerSecondAsyncCommit = await ingestRate(asyncDb, `${tag}_async`, 1000);
    // One writer: a batch of one, a transaction per event (what every writer paid before group commit).
    out.ingestPerSecond1Writer = await ingestRate(db, `${tag}_one`, 500, 1);
    const batched = async (batch: number, count: number) => {
      const endpoints = await listRoutableEndpoints(db, ctx.ingestAccountId);
      let next = 0;
      const t0 = performance.now();
      await Promise.all(
        Array.from({ length: 4 }, async () => {
          for (let b = next++; b * batch < count; b = next++) {
            await inTransaction(db, async (tx) => {
              for (let i = b * batch; i < Math.min(count, (b + 1) * batch); i++) {
                const row = originlessRow(ctx, `${tag}_b${batch}_${i}`);
                const ev = await appendEvent(tx, row);
                await insertEventDeliveries(
                  tx,
                  {
                    accountId: ctx.ingestAccountId,
                    eventId: ev!.id,
                    eventType: ctx.def.type,
                    idempotencyKey: row.idempotency_key,
                    environment: 'live',
                  },
                  endpoints.map((e) => ({ endpointId: e.id, status: 'pending' as const, held: false })),
                );
              }
            });
          }
        }),
      );
      return Math.round(count / (ms(t0) / 1000));
    };
    out.ingestPerSecondBatched50 = await batched(50, 2000);
  } finally {
    await asyncDb.end();
  }
  fs.writeFileSync(ctx.file, report.join('\n'));
  out.plansFile = ctx.file;
  return out;
}
