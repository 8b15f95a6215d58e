/** Message templates, as the provider last reported them (synced, or updated by its webhook). */
import type { PageKey } from '../core/paging.js';
import type { Environment } from './events.js';
import { inPageOrder, keyset, type Page, pageKeyColumn } from './keyset.js';
import type { Queryable } from './pool.js';

export interface TemplateRow {
  id: string;
  account_id: string;
  environment: Environment;
  waba_id: string;
  provider_template_id: string;
  name: string;
  language: string;
  category: string | null;
  status: string;
  status_reason: string | null;
  components: unknown[];
  created_at: Date;
  updated_at: Date;
  page_key: PageKey;
}

export interface ProviderTemplate {
  id: string;
  name: string;
  language: string;
  category: string | null;
  status: string;
  components: unknown[];
}

const COLUMNS = `*, ${pageKeyColumn()}`;

/**
 * Makes the stored templates of a waba what the provider answered: new ones inserted, known ones
 * refreshed (updated_at moves only when something changed), and those the provider no longer
 * lists removed. Returns how many rows were written and removed.
 */
export async function replaceWabaTemplates(
  tx: Queryable,
  scope: { accountId: string; environment: Environment; wabaId: string },
  templates: ProviderTemplate[],
): Promise<{ upserted: number; removed: number }> {
  const { rows } = await tx.query<{ id: string }>(
    `INSERT INTO templates (account_id, environment, waba_id, provider_template_id, name, language, category, status, components)
     SELECT $1, $2, $3, t.id, t.name, t.language, t.category, t.status, t.components
     FROM jsonb_to_recordset($4::jsonb) AS t(id text, name text, language text, category text, status text, components jsonb)
     ON CONFLICT (account_id, environment, waba_id, provider_template_id) DO UPDATE SET
       name = EXCLUDED.name, language = EXCLUDED.language, category = EXCLUDED.category, status = EXCLUDED.status,
       components = EXCLUDED.components,
       status_reason = CASE WHEN templates.status = EXCLUDED.status THEN templates.status_reason END,
       updated_at = now()
     WHERE (templates.name, templates.language, templates.category, templates.status, templates.components)
       IS DISTINCT FROM (EXCLUDED.name, EXCLUDED.language, EXCLUDED.category, EXCLUDED.status, EXCLUDED.components)
     RETURNING id`,
    [scope.accountId, scope.environment, scope.wabaId, JSON.stringify(templates)],
  );
  const { rowCount } = await tx.query(
    `DELETE FROM templates WHERE account_id = $1 AND environment = $2 AND waba_id = $3 AND NOT (provider_template_id = ANY($4::text[]))`,
    [scope.accountId, scope.environment, scope.wabaId, templates.map((t) => t.id)],
  );
  return { upserted: rows.length, removed: rowCount ?? 0 };
}

/**
 * The provider's status notification (SPEC 6.4: no event). The provider names the template by
 * its id within the waba it notifies for; every Account's copy of it follows.
 */
export async function updateTemplateStatus(
  db: Queryable,
  u: { wabaId: string; providerTemplateId: string; status: string; reason: string | null },
): Promise<number> {
  const { rowCount } = await db.query(
    `UPDATE templates SET status = $3, status_reason = $4, updated_at = now()
     WHERE waba_id = $1 AND provider_template_id = $2 AND (status, status_reason) IS DISTINCT FROM ($3, $4)`,
    [u.wabaId, u.providerTemplateId, u.status, u.reason],
  );
  return rowCount ?? 0;
}

export interface TemplateFilter {
  accountId: string;
  environment: Environment;
  wabaId?: string;
  status?: string;
  name?: string;
}

export async function listTemplates(db: Queryable, f: TemplateFilter, page: Page): Promise<TemplateRow[]> {
  const params: unknown[] = [f.accountId, f.environment, page.limit + 1];
  const where: string[] = ['account_id = $1', 'environment = $2'];
  const add = (column: string, value: unknown) => {
    params.push(value);
    where.push(`${column} = $${params.length}`);
  };
  if (f.wabaId !== undefined) add('waba_id', f.wabaId);
  if (f.status !== undefined) add('status', f.status);
  if (f.name !== undefined) add('name', f.name);
  const ks = keyset(page, params);
  if (ks.clause) where.push(ks.clause);
  const { rows } = await db.query<TemplateRow>(
    `SELECT ${COLUMNS} FROM templates WHERE ${where.join(' AND ')} ORDER BY created_at ${ks.order}, id ${ks.order} LIMIT $3`,
    params,
  );
  return inPageOrder(rows, ks);
}

/** The template a broadcast names, on the waba of its channel account. */
export async function findTemplate(
  db: Queryable,
  t: { accountId: string; environment: Environment; wabaId: string; name: string; language: string },
): Promise<TemplateRow | undefined> {
  const { rows } = await db.query<TemplateRow>(
    `SELECT ${COLUMNS} FROM templates WHERE account_id = $1 AND environment = $2 AND waba_id = $3 AND name = $4 AND language = $5
     ORDER BY updated_at DESC LIMIT 1`,
    [t.accountId, t.environment, t.wabaId, t.name, t.language],
  );
  return rows[0];
}
