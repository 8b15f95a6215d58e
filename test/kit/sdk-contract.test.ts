/** The SDK cannot drift from the server: its types are generated from the OpenAPI document and its route table matches it. */
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ROUTES, type Shape } from '@webhook-platform/sdk';
import { apiV1Document, generatedFile, generateTypes } from '../../packages/sdk/scripts/generate-types.js';

type Schema = { type?: string; properties?: Record<string, unknown>; $ref?: string };

/** The success shape the document gives an operation. */
function documentedShape(op: { responses: Record<string, { content?: Record<string, { schema: Schema }> }> }): Shape {
  const ok = op.responses['200'] ?? op.responses['201'] ?? op.responses['202'];
  if (!ok?.content) return 'empty';
  const props = ok.content['application/json']!.schema.properties ?? {};
  const data = props.data as Schema | undefined;
  if (data?.type === 'array') return 'paging' in props ? 'page' : 'array';
  return 'item';
}

describe('SDK contract', () => {
  it('src/openapi.ts is what the generator makes from the current document (run `npm run sdk:generate` otherwise)', async () => {
    expect(fs.readFileSync(generatedFile, 'utf8')).toBe(await generateTypes());
  });

  it('ROUTES names every /api/v1 operation of the document once, with its documented answer shape', () => {
    const documented = new Map<string, Shape>();
    for (const [path, item] of Object.entries(apiV1Document().paths)) {
      for (const [method, op] of Object.entries(item as Record<string, never>)) documented.set(`${method} ${path}`, documentedShape(op));
    }
    const sdk = new Map(Object.values(ROUTES).map((r) => [`${r.method} ${r.path}`, r.shape as Shape]));
    expect(sdk.size).toBe(Object.keys(ROUTES).length);
    expect(Object.fromEntries(sdk)).toEqual(Object.fromEntries(documented));
  });
});
