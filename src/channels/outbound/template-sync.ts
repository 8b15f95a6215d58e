/**
 * Reads a business account's templates from the provider (Graph `GET /{waba_id}/message_templates`,
 * followed page by page) and makes the stored copy match.
 */
import { z } from 'zod';
import { DomainError } from '../../core/domain-error.js';
import type { Environment } from '../../db/events.js';
import { inTransaction, type Db } from '../../db/pool.js';
import { replaceWabaTemplates, type ProviderTemplate } from '../../db/templates.js';
import type { ProviderHttp } from '../provider-http.js';
import { asProviderFailure } from '../provider-errors.js';

const templatePage = z.looseObject({
  data: z.array(
    z.looseObject({
      id: z.union([z.string().min(1), z.number()]).transform(String),
      name: z.string().min(1),
      language: z.string().min(1),
      category: z.string().nullish(),
      status: z.string().min(1),
      components: z.array(z.unknown()).nullish(),
    }),
  ),
  paging: z.looseObject({ cursors: z.looseObject({ after: z.string().optional() }).optional(), next: z.string().optional() }).optional(),
});

/** More pages than this is a provider answering in circles: stop rather than loop. */
const MAX_PAGES = 100;

export async function fetchWabaTemplates(provider: ProviderHttp, wabaId: string): Promise<ProviderTemplate[]> {
  const out: ProviderTemplate[] = [];
  let after: string | undefined;
  for (let page = 0; page < MAX_PAGES; page++) {
    let raw: unknown;
    try {
      raw = await provider.get(`/${encodeURIComponent(wabaId)}/message_templates`, { limit: '100', ...(after ? { after } : {}) });
    } catch (err) {
      asProviderFailure(err, 'reading the templates');
    }
    const parsed = templatePage.safeParse(raw);
    if (!parsed.success) throw new DomainError(502, 'provider_error', 'reading the templates: the provider answered an unexpected shape');
    for (const t of parsed.data.data) {
      out.push({
        id: t.id,
        name: t.name,
        language: t.language,
        category: t.category ?? null,
        status: t.status,
        components: t.components ?? [],
      });
    }
    after = parsed.data.paging?.next ? parsed.data.paging.cursors?.after : undefined;
    if (!after) return out;
  }
  throw new DomainError(502, 'provider_error', `reading the templates: more than ${MAX_PAGES} pages`);
}

export async function syncWabaTemplates(
  db: Db,
  provider: ProviderHttp,
  scope: { accountId: string; environment: Environment; wabaId: string },
): Promise<{ count: number; upserted: number; removed: number }> {
  const templates = await fetchWabaTemplates(provider, scope.wabaId);
  // The provider lists a template once per language; a repeat in its pages would break the upsert.
  const unique = [...new Map(templates.map((t) => [t.id, t])).values()];
  const written = await inTransaction(db, (tx) => replaceWabaTemplates(tx, scope, unique));
  return { count: unique.length, ...written };
}
