/**
 * The reference at /docs: every operation in one of the groups, an example request for every route
 * that takes a body and an example answer for every route that answers with one, each example
 * accepted by the route's own zod schema (the one that validates real requests), and an intro
 * that covers the messaging surfaces, not only webhooks and the stream.
 */
import { Validator } from '@seriousme/openapi-schema-validator';
import type { RouteConfig } from '@asteasolutions/zod-to-openapi';
import type { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { checkForChannel, parseSendRequest } from '../../src/core/outbound-message.js';
import { buildOpenApiDocument, DOCUMENTED_ROUTES, TAGS } from '../../src/api/openapi.js';

type Media = { schema?: unknown; example?: unknown; examples?: Record<string, { summary?: string; value: unknown }> };
type Operation = {
  tags?: string[];
  requestBody?: { content?: Record<string, Media> };
  responses: Record<string, { content?: Record<string, Media> }>;
};

const document = buildOpenApiDocument();
const operations = Object.entries(document.paths ?? {}).flatMap(([path, item]) =>
  (['get', 'post', 'put', 'patch', 'delete'] as const)
    .filter((method) => (item as Record<string, unknown>)[method])
    .map((method) => ({
      key: `${method.toUpperCase()} ${path}`,
      operation: (item as Record<string, Operation>)[method]!,
      route: DOCUMENTED_ROUTES.find((r) => r.method === method && r.path === path)!,
    })),
);

/** The example values of a media object: its one example, or each named one. */
const examplesOf = (media: Media | undefined): unknown[] =>
  media?.example !== undefined ? [media.example] : Object.values(media?.examples ?? {}).map((e) => e.value);

const zodBody = (route: RouteConfig) =>
  (route.request?.body?.content['application/json'] as { schema?: unknown } | undefined)?.schema as z.ZodType | undefined;
const zodAnswer = (route: RouteConfig, status: string) =>
  (route.responses[status] as { content?: Record<string, { schema: unknown }> } | undefined)?.content?.['application/json']?.schema as
    z.ZodType | undefined;

describe('the /docs reference', () => {
  it('is a valid OpenAPI 3.1 document, with the examples and groups in it', async () => {
    const result = await new Validator().validate(document as unknown as Parameters<Validator['validate']>[0]);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
  });

  it('groups every operation under exactly one tag of the list, and lists the groups in order', () => {
    const names = TAGS.map((t) => t.name);
    expect(names).toEqual(['endpoints', 'deliveries', 'events', 'messaging', 'contacts', 'account']);
    expect(document.tags?.map((t) => t.name)).toEqual(names);
    expect(operations.length).toBe(DOCUMENTED_ROUTES.length);
    expect(operations.filter(({ operation }) => operation.tags?.length !== 1 || !names.includes(operation.tags[0] as never))).toEqual([]);
    // Every group has operations.
    expect(new Set(operations.map(({ operation }) => operation.tags![0]))).toEqual(new Set(names));
  });

  it('has a request example for every route that takes a body, accepted by the schema that validates the request', () => {
    const withBody = operations.filter(({ operation }) => operation.requestBody);
    expect(withBody.length).toBeGreaterThanOrEqual(15);
    for (const { key, operation, route } of withBody) {
      const examples = examplesOf(operation.requestBody!.content?.['application/json']);
      expect(examples.length, key).toBeGreaterThan(0);
      for (const example of examples) {
        const parsed = zodBody(route)!.safeParse(example);
        expect(parsed.success, `${key}: ${JSON.stringify(parsed.error?.issues)}`).toBe(true);
      }
    }
  });

  it('has an example answer for every route that answers with a body, accepted by the schema of that answer', () => {
    const problems: string[] = [];
    let answered = 0;
    for (const { key, operation, route } of operations) {
      const successes = Object.entries(operation.responses).filter(([status]) => status.startsWith('2'));
      if (successes.length === 0) problems.push(`${key}: no success answer`);
      for (const [status, response] of successes) {
        const media = response.content?.['application/json'];
        // 204 and the like: no body, nothing to show.
        if (!media) continue;
        answered++;
        const examples = examplesOf(media);
        if (examples.length !== 1) problems.push(`${key} ${status}: ${examples.length} examples`);
        const parsed = zodAnswer(route, status)!.safeParse(examples[0]);
        if (!parsed.success) problems.push(`${key} ${status}: ${JSON.stringify(parsed.error.issues)}`);
        // Built from the schemas' examples, never from placeholders (a JSON Schema's own `"type":"string"` aside).
        if (/(?<!"type":)"string"/.test(JSON.stringify(examples[0]))) problems.push(`${key} ${status}: a "string" placeholder`);
      }
    }
    expect(problems).toEqual([]);
    expect(answered).toBeGreaterThanOrEqual(DOCUMENTED_ROUTES.length - 5);
  });

  it('offers a valid text message first for POST /api/v1/messages, and a template one, each with its own fields only', () => {
    const media = (document.paths!['/api/v1/messages'] as { post: Operation }).post.requestBody!.content!['application/json']!;
    const named = Object.entries(media.examples ?? {});
    expect(named[0]![0]).toBe('text');
    const text = named[0]![1].value as Record<string, unknown>;
    expect(text).toMatchObject({ type: 'text', text: { body: expect.any(String) } });
    expect(text).not.toHaveProperty('template');
    expect(text.to).toMatch(/^\d{7,15}$/);
    expect(named.map(([name]) => name)).toContain('template');
    // The rules the route applies beyond the schema (one type's fields, a phone number on chatapp).
    for (const [name, { value }] of named) {
      const request = parseSendRequest(value);
      expect(checkForChannel(request, 'chatapp').to, name).toMatch(/^\d+$/);
    }
  });

  it('has an intro that covers webhooks, the stream and the messaging surfaces', () => {
    const intro = document.info.description ?? '';
    for (const words of [
      'webhook',
      'stream',
      'POST /api/v1/messages',
      'template',
      'broadcast',
      'conversations',
      'channel account',
      'setup link',
      'Contacts',
    ])
      expect(intro, words).toContain(words);
  });
});
