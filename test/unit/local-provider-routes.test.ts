/**
 * The README documents the local provider's control routes: every `/_local` route it registers is
 * in README.md with its method, and every `/_local` path README.md names is one it serves.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { localControlRoutes } from '../../dev/local-provider/server.js';

const readme = fs.readFileSync(path.resolve(import.meta.dirname, '../../README.md'), 'utf8');
const routes = localControlRoutes();

describe('the local provider in README.md', () => {
  it('names every /_local route the provider registers, with its method', () => {
    expect(routes.length).toBeGreaterThanOrEqual(20);
    expect(routes.filter((route) => !readme.includes(`\`${route}\``))).toEqual([]);
  });

  it('names no /_local path the provider does not serve', () => {
    const served = new Set(routes.map((route) => route.split(' ')[1]));
    const named = [...readme.matchAll(/\/_local\/[\w/{}]*[\w}]/g)].map((m) => m[0]);
    expect(named.length).toBeGreaterThan(0);
    expect([...new Set(named)].filter((p) => !served.has(p))).toEqual([]);
  });
});
