/**
 * `webhooks listen`: a local HTTPS receiver for development. Its certificate is signed by a
 * private CA made once with `selfsigned` and kept in the config folder, so the service can be
 * told to trust exactly that CA (WEBHOOKS_DEV_CA_FILE) instead of skipping TLS checks.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { generate } from 'selfsigned';
import { verifyWebhook } from '@webhook-platform/sdk';

export interface ListenerTls {
  caFile: string;
  cert: string;
  key: string;
}

const MAX_BODY = 1024 * 1024;

/** The CA and the localhost certificate in `dir`, made on first use. */
export async function ensureCertificate(dir: string): Promise<ListenerTls> {
  const caFile = path.join(dir, 'ca.pem');
  const certFile = path.join(dir, 'cert.pem');
  const keyFile = path.join(dir, 'key.pem');
  // Made again when missing or within a week of expiry (selfsigned certificates last a year).
  const fresh = () => new Date(new crypto.X509Certificate(fs.readFileSync(certFile)).validTo).getTime() > Date.now() + 7 * 86_400_000;
  if (![caFile, certFile, keyFile].every((f) => fs.existsSync(f)) || !fresh()) {
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    const ca = await generate([{ name: 'commonName', value: 'webhooks listen local CA' }], {
      keySize: 2048,
      algorithm: 'sha256',
      extensions: [
        { name: 'basicConstraints', cA: true, critical: true },
        { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true },
      ],
    });
    const leaf = await generate([{ name: 'commonName', value: 'localhost' }], {
      keySize: 2048,
      algorithm: 'sha256',
      ca: { key: ca.private, cert: ca.cert },
      extensions: [
        {
          name: 'subjectAltName',
          altNames: [
            { type: 2, value: 'localhost' },
            { type: 7, ip: '127.0.0.1' },
            { type: 7, ip: '::1' },
          ],
        },
        { name: 'extKeyUsage', serverAuth: true },
      ],
    });
    // The CA's key is not kept: nothing else is ever signed with it.
    fs.writeFileSync(keyFile, leaf.private, { mode: 0o600 });
    fs.writeFileSync(certFile, leaf.cert);
    fs.writeFileSync(caFile, ca.cert);
  }
  return { caFile, cert: fs.readFileSync(certFile, 'utf8'), key: fs.readFileSync(keyFile, 'utf8') };
}

/** The url to give an endpoint: `localhost` for a loopback listener, as its certificate and the README name it. */
export function listenUrl(host: string, port: number): string {
  const name = host === '127.0.0.1' || host === '::1' || host === 'localhost' ? 'localhost' : host.includes(':') ? `[${host}]` : host;
  return `https://${name}:${port}/hooks`;
}

export interface ReceivedWebhook {
  event: string | undefined;
  idempotencyKey: string | undefined;
  duplicate: boolean;
  body: unknown;
  rawBody: string;
}

export interface Listener {
  port: number;
  url: string;
  close(): Promise<void>;
}

/** Answers 401 to a bad signature, 400 without X-Idempotency-Key, 200 otherwise; each verified delivery goes to `onWebhook`. */
export async function startListener(opts: {
  host: string;
  port: number;
  secrets: string[];
  tls: ListenerTls;
  onWebhook(w: ReceivedWebhook): void;
  onRefused(status: number, why: string): void;
}): Promise<Listener> {
  const seen = new Set<string>();
  const server = https.createServer({ cert: opts.tls.cert, key: opts.tls.key }, (req, res) => {
    const reply = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY) {
        reply(413, { error: 'body too large' });
        req.destroy();
      } else chunks.push(c);
    });
    req.on('end', () => {
      if (req.method !== 'POST') return reply(405, { error: 'POST only' });
      const raw = Buffer.concat(chunks);
      if (!verifyWebhook(raw, req.headers['x-webhook-signature'], opts.secrets)) {
        opts.onRefused(401, 'signature does not match any --secret');
        return reply(401, { error: 'invalid signature' });
      }
      const key = req.headers['x-idempotency-key'];
      if (typeof key !== 'string' || key === '') {
        opts.onRefused(400, 'no X-Idempotency-Key');
        return reply(400, { error: 'missing X-Idempotency-Key' });
      }
      let body: unknown;
      try {
        body = JSON.parse(raw.toString('utf8'));
      } catch {
        body = raw.toString('utf8');
      }
      const duplicate = seen.has(key);
      seen.add(key);
      opts.onWebhook({
        event: req.headers['x-webhook-event'] as string | undefined,
        idempotencyKey: key,
        duplicate,
        body,
        rawBody: raw.toString('utf8'),
      });
      reply(200, { received: true });
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    url: listenUrl(opts.host, port),
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
