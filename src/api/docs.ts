/**
 * The API reference at /docs: Swagger UI rendering /api/v1/openapi.json, with schemas,
 * examples and try-it. Its assets are served from the swagger-ui-dist package itself, never a
 * CDN, so the reference works offline and the page loads nothing from another host.
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import Router from '@koa/router';
import { notFound } from '../core/domain-error.js';

const require = createRequire(import.meta.url);
const distDir = path.dirname(require.resolve('swagger-ui-dist/package.json'));

/** The files the page uses, and nothing else of the package directory. */
const ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'favicon-32x32.png': 'image/png',
};

// validatorUrl null: Swagger UI would otherwise send the document to an online validator.
// persistAuthorization keeps the X-API-Key across reloads, so try-it needs the key once.
const INIT = `window.ui = SwaggerUIBundle({
  url: '/api/v1/openapi.json',
  dom_id: '#swagger-ui',
  deepLinking: true,
  persistAuthorization: true,
  displayRequestDuration: true,
  validatorUrl: null,
  presets: [SwaggerUIBundle.presets.apis],
  layout: 'BaseLayout',
});
`;

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Webhook platform API reference</title>
<link rel="stylesheet" href="/docs/assets/swagger-ui.css">
<link rel="icon" type="image/png" href="/docs/assets/favicon-32x32.png">
</head>
<body>
<div id="swagger-ui"><noscript>This reference needs JavaScript; the document itself is at <a href="/api/v1/openapi.json">/api/v1/openapi.json</a>.</noscript></div>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script src="/docs/init.js"></script>
</body>
</html>
`;

export function docsRoutes(): Router {
  const router = new Router();
  router.get('/docs', (ctx) => {
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = PAGE;
  });
  router.get('/docs/init.js', (ctx) => {
    ctx.type = 'text/javascript; charset=utf-8';
    ctx.body = INIT;
  });
  router.get('/docs/assets/:file', (ctx) => {
    const file = ctx.params.file!;
    const type = Object.hasOwn(ASSETS, file) ? ASSETS[file] : undefined;
    if (!type) throw notFound('asset');
    ctx.type = type;
    // The files change only with the package version; a day keeps reloads cheap without pinning an old UI.
    ctx.set('Cache-Control', 'public, max-age=86400');
    ctx.body = fs.createReadStream(path.join(distDir, file));
  });
  return router;
}
