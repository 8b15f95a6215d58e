/** What the console tells a person to paste looks like what the service issues. */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { generateApiKey } from '../../src/security/api-key.js';

const ROOT = path.resolve(import.meta.dirname, '../..');

describe('the console sign-in', () => {
  it('the key placeholder names the prefixes of the live and the sandbox keys the service generates', () => {
    const html = fs.readFileSync(path.join(ROOT, 'console/index.html'), 'utf8');
    const placeholder = html.match(/id="api-key"[^>]*placeholder="([^"]*)"/)![1]!;
    const prefixes = [...placeholder.matchAll(/(\w+_)…/g)].map((m) => m[1]!);
    expect(prefixes).toHaveLength(2);
    for (const environment of ['live', 'sandbox'] as const)
      expect(prefixes.some((prefix) => generateApiKey(environment).key.startsWith(prefix) && prefix.includes(environment))).toBe(true);
  });
});
