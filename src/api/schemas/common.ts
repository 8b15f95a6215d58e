/** What every family's schemas share: ids, timestamps, the error envelope, paging, and the examples' ids. */
import { extendZodWithOpenApi } from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';

// Every family's schemas import this file, so `.openapi()` exists before any of them is built.
extendZodWithOpenApi(z);

export const Uuid = z.uuid();
export const Timestamp = z.string().openapi({ format: 'date-time', example: '2026-11-22T10:00:00.000Z' });

export const ErrorEnvelope = z
  .object({ error: z.object({ code: z.string(), message: z.string() }) })
  .openapi('Error', { example: { error: { code: 'invalid_url', message: 'url must use https://' } } });

/** Example objects of the reference at /docs: one endpoint, one delivery, one stream item, consistent with each other. */
export const ENDPOINT_ID = '0b9a4a4e-3f4e-4c57-9d0e-6c1f7f1d2a10';
export const EVENT_ID = '5f7c2d1e-8a3b-4c6d-9e0f-1a2b3c4d5e6f';

export const Paging = z
  .object({
    cursors: z.object({ before: z.string().nullable(), after: z.string().nullable() }),
    next: z.string().nullable(),
    previous: z.string().nullable(),
  })
  .openapi('Paging');

export const ListQuery = z.object({
  limit: z.string().optional().openapi({ description: 'Page size, default 20, at most 100.' }),
  after: z.string().optional().openapi({ description: 'Pass paging.next to get the next page.' }),
  before: z.string().optional().openapi({ description: 'Pass paging.previous to get the previous page.' }),
});

/** ISO 8601 with a zone (Z or an offset), as every timestamp the API answers. */
export const InstantInput = z.iso.datetime({ offset: true }).openapi({ format: 'date-time', example: '2026-11-22T10:00:00Z' });
