/**
 * Stages a scene for the Temporal Web UI (the screenshots in docs/): `npm start` in its own data
 * folder, a local HTTPS receiver, and four endpoints of one Account: two healthy, one whose
 * receiver answers its test but fails every real delivery, one deactivated with a backlog held.
 * It prints the Web UI's address and keeps running until Ctrl-C.
 *
 *   npx tsx dev/stage-webui.ts            (STAGE_DIR, STAGE_PORT_BASE to move it)
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import { makeLocalTls } from './tls.js';

const dir = path.resolve(process.env.STAGE_DIR ?? '.data/webui-stage');
const base = Number(process.env.STAGE_PORT_BASE ?? 17_300);
const ports = { api: base, temporal: base + 1, ui: base + 2, provider: base + 3, receiver: base + 4 };

async function main() {
  fs.rmSync(dir, { recursive: true, force: true });
  const tls = await makeLocalTls(path.join(dir, 'tls'), 'webui-stage');
  // Real deliveries to a path with "/failing/" fail; the signed test passes everywhere (it verifies the endpoint).
  const receiver = https.createServer({ cert: tls.cert, key: tls.key }, (req, res) => {
    req.resume();
    const failing = req.url?.includes('/failing/') && req.headers['x-webhook-event'] !== 'webhook.test';
    res.writeHead(failing ? 503 : 200).end(failing ? 'maintenance' : 'ok');
  });
  await new Promise<void>((resolve) => receiver.listen(ports.receiver, '127.0.0.1', resolve));

  const env = {
    ...process.env,
    DATA_DIR: dir,
    PORT: String(ports.api),
    TEMPORAL_PORT: String(ports.temporal),
    TEMPORAL_UI_PORT: String(ports.ui),
    LOCAL_PROVIDER_PORT: String(ports.provider),
    WEBHOOKS_DEV_MODE: 'true',
    WEBHOOKS_DEV_CA_FILE: tls.caFile,
    LOG_LEVEL: 'warn',
  };
  // One process (no npx or tsx wrapper in between), so a signal reaches it.
  const service = spawn(process.execPath, ['--import', 'tsx', 'dev/start.ts'], { env, stdio: ['ignore', 'pipe', 'inherit'] });
  const key = await new Promise<string>((resolve, reject) => {
    let out = '';
    service.stdout.on('data', (chunk: Buffer) => {
      process.stdout.write(chunk);
      out += chunk.toString();
      const live = /live API key:\s+(\S+)/.exec(out);
      if (live && out.includes('Ctrl-C stops everything')) resolve(live[1]!);
    });
    service.once('exit', (code) => reject(new Error(`npm start exited with ${code}`)));
  });
  const stop = () => service.kill('SIGTERM');
  // The receiver would keep this process alive: it ends with the service.
  service.once('exit', () => process.exit(0));
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  try {
    await stage(key);
  } catch (err) {
    stop();
    throw err;
  }
}

async function stage(key: string) {
  const api = async (method: string, url: string, body?: unknown) => {
    const res = await fetch(`http://127.0.0.1:${ports.api}${url}`, {
      method,
      headers: { 'x-api-key': key, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${url}: ${res.status} ${text}`);
    return text ? JSON.parse(text) : null;
  };
  const receiverUrl = (p: string) => `https://localhost:${ports.receiver}${p}`;
  const endpoints: Record<string, string> = {};
  for (const [name, p] of [
    ['acme', '/acme/orders'],
    ['globex', '/globex/crm-sync'],
    ['initech', '/failing/initech/hooks'],
    ['umbrella', '/umbrella/alerts'],
  ] as const) {
    const created = await api('POST', '/api/v1/webhooks', { url: receiverUrl(p), events: ['crm'] });
    endpoints[name] = created.data.id;
    await api('POST', `/api/v1/webhooks/${created.data.id}/test`);
  }
  for (let n = 1; n <= 3; n++) {
    await api('POST', '/api/v1/events', {
      type: 'crm.demand.created',
      data: {
        entity_type: 'demand',
        entity_id: `dem_stage_${n}`,
        before_data: null,
        after_data: { id: `dem_stage_${n}`, version: 1, status: 'open', contact_id: 'c', title: `Demand ${n}` },
        actor_user_id: null,
      },
    });
  }
  // Deactivated after the events arrived: its deliveries are held.
  await new Promise((r) => setTimeout(r, 500));
  await api('PATCH', `/api/v1/webhooks/${endpoints.umbrella}`, { active: false });
  console.log(`\nStaged. Endpoints: ${JSON.stringify(endpoints)}`);
  console.log(`Web UI: http://127.0.0.1:${ports.ui}/namespaces/default/workflows`);
  console.log(
    `Failing endpoint: http://127.0.0.1:${ports.ui}/namespaces/default/workflows/${encodeURIComponent(`endpoint/${endpoints.initech}`)}`,
  );
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
