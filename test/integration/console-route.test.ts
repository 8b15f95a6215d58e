/** /console: the page and its listed files, each under the strict CSP; nothing else of the folder or the repository. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONSOLE_CSP } from '../../src/api/console.js';
import { startTestApi, type TestApi } from '../support/harness.js';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(() => api.close());

describe('console route', () => {
  it('serves the page and its modules with their types under a CSP that allows only this origin', async () => {
    const page = await fetch(`${api.url}/console`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(page.headers.get('content-security-policy')).toBe(CONSOLE_CSP);
    expect(CONSOLE_CSP).toContain("script-src 'self'");
    expect(CONSOLE_CSP).toContain("form-action 'none'");
    expect(CONSOLE_CSP).not.toContain('unsafe');
    expect(page.headers.get('x-content-type-options')).toBe('nosniff');
    expect(page.headers.get('referrer-policy')).toBe('no-referrer');
    const html = await page.text();
    // Every script and stylesheet the page names is one the route serves, from this origin.
    const refs = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
    const files = [
      'app.js',
      'api.js',
      'state.js',
      'views.js',
      'messages.js',
      'chart.js',
      'endpoints.js',
      'deliveries.js',
      'stream.js',
      'style.css',
    ];
    expect(refs.sort()).toEqual(files.map((f) => `/console/${f}`).sort());
    for (const [file, type] of [
      ['app.js', 'text/javascript'],
      ['api.js', 'text/javascript'],
      ['chart.js', 'text/javascript'],
      ['views.js', 'text/javascript'],
      ['state.js', 'text/javascript'],
      ['messages.js', 'text/javascript'],
      ['endpoints.js', 'text/javascript'],
      ['deliveries.js', 'text/javascript'],
      ['stream.js', 'text/javascript'],
      ['style.css', 'text/css'],
    ]) {
      const res = await fetch(`${api.url}/console/${file}`);
      expect([file, res.status, res.headers.get('content-type')]).toEqual([file, 200, `${type}; charset=utf-8`]);
      expect(res.headers.get('content-security-policy')).toBe(CONSOLE_CSP);
      const body = await res.text();
      // No module reaches outside this origin.
      expect(body).not.toMatch(/https?:\/\/(?!www\.w3\.org\/2000\/svg)/);
    }
  });

  it('refuses files it does not list, and paths out of the folder, with the error envelope', async () => {
    for (const p of ['/console/index.html', '/console/secret.txt', '/console/..%2Fpackage.json', '/console/%2e%2e%2fapi%2fconsole.ts']) {
      const res = await fetch(`${api.url}${p}`);
      expect([p, res.status]).toEqual([p, 404]);
      expect((await res.json()).error.code).toBe('not_found');
    }
    // The page's URLs are absolute, so /console/ (the router is not strict) serves it as well.
    const slash = await fetch(`${api.url}/console/`);
    expect([slash.status, slash.headers.get('content-security-policy')]).toEqual([200, CONSOLE_CSP]);
  });
});
