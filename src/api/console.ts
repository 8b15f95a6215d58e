/**
 * The tenant console at /console: static files of the repository's `console/` folder (one
 * page, plain ES modules, a stylesheet), no build step. Every answer carries a strict
 * Content-Security-Policy: the page runs only its own scripts and talks only to this origin,
 * and forms cannot submit anywhere (a form that fell back to a GET would put the key in a URL).
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Router from '@koa/router';
import type { Context } from 'koa';
import { notFound } from '../core/domain-error.js';

const consoleDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'console');

/** The files the page uses, and nothing else of the folder. */
const ASSETS: Record<string, string> = {
  'app.js': 'text/javascript; charset=utf-8',
  'api.js': 'text/javascript; charset=utf-8',
  'chart.js': 'text/javascript; charset=utf-8',
  'views.js': 'text/javascript; charset=utf-8',
  'state.js': 'text/javascript; charset=utf-8',
  'messages.js': 'text/javascript; charset=utf-8',
  'endpoints.js': 'text/javascript; charset=utf-8',
  'deliveries.js': 'text/javascript; charset=utf-8',
  'stream.js': 'text/javascript; charset=utf-8',
  'style.css': 'text/css; charset=utf-8',
};

export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

function secure(ctx: Context) {
  ctx.set('Content-Security-Policy', CONSOLE_CSP);
  ctx.set('X-Content-Type-Options', 'nosniff');
  ctx.set('Referrer-Policy', 'no-referrer');
  ctx.set('X-Frame-Options', 'DENY');
  // The files change with a deploy; revalidating each load keeps page and API in step.
  ctx.set('Cache-Control', 'no-cache');
}

export function consoleRoutes(): Router {
  const router = new Router();
  router.get('/console', (ctx) => {
    secure(ctx);
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = fs.createReadStream(path.join(consoleDir, 'index.html'));
  });
  router.get('/console/:file', (ctx) => {
    const file = ctx.params.file!;
    const type = Object.hasOwn(ASSETS, file) ? ASSETS[file] : undefined;
    if (!type) throw notFound('console file');
    secure(ctx);
    ctx.type = type;
    ctx.body = fs.createReadStream(path.join(consoleDir, file));
  });
  return router;
}
