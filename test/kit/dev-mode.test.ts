/** WEBHOOKS_DEV_MODE: loopback receivers and an extra CA for `webhooks listen`; off, nothing changes. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { createHttpClient } from '../../src/delivery/http-client.js';
import { loadConfig } from '../../src/runtime/config.js';
import { createDestinationPolicy } from '../../src/security/destination-policy.js';
import { startReceiver, type Receiver } from '../support/https-receiver.js';

let receiver: Receiver;
let savedExtraCa: string | undefined;
beforeAll(async () => {
  receiver = await startReceiver();
  // The test CA must come only from the dev-mode file here.
  savedExtraCa = process.env.NODE_EXTRA_CA_CERTS;
  delete process.env.NODE_EXTRA_CA_CERTS;
});
afterAll(async () => {
  process.env.NODE_EXTRA_CA_CERTS = savedExtraCa;
  await receiver.close();
});

const post = async (config: ReturnType<typeof loadConfig>) => {
  const client = createHttpClient({
    policy: createDestinationPolicy({ allowCidrs: config.allowPrivateCidrs }),
    timeoutMs: 5_000,
    devCaFile: config.devCaFile,
  });
  try {
    return await client.post(
      { endpointId: 'ep_dev', url: `https://127.0.0.1:${receiver.port}/hooks` },
      { 'content-type': 'application/json' },
      Buffer.from('{}'),
    );
  } finally {
    await client.close();
  }
};

describe('dev mode', () => {
  it('is off unless WEBHOOKS_DEV_MODE=1: no loopback, no CA file, and a loopback receiver is refused', async () => {
    const config = loadConfig({ WEBHOOKS_DEV_CA_FILE: '/tmp/ca.pem' });
    expect(config.devMode).toBe(false);
    expect(config.devCaFile).toBeUndefined();
    expect(config.allowPrivateCidrs).not.toContain('127.0.0.0/8');
    expect(await post(config)).toMatchObject({ status: null, error: 'blocked_destination' });
  });

  it('lets loopback through and trusts the CA file, read again when it appears after start', async () => {
    const caFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'devca-')), 'ca.pem');
    const config = loadConfig({ WEBHOOKS_DEV_MODE: '1', WEBHOOKS_DEV_CA_FILE: caFile });
    expect(config.devMode).toBe(true);
    // The loopback ranges, IPv4 and IPv6, and nothing else: no private range is let through.
    expect(config.allowPrivateCidrs).toEqual(['127.0.0.0/8', '::1/128']);
    expect(config.devCaFile).toBe(caFile);

    const client = createHttpClient({
      policy: createDestinationPolicy({ allowCidrs: config.allowPrivateCidrs }),
      timeoutMs: 5_000,
      devCaFile: config.devCaFile,
    });
    try {
      const url = `https://127.0.0.1:${receiver.port}/hooks`;
      // Not trusted yet: the receiver's CA is not in the file.
      expect(await client.post({ endpointId: 'ep_dev', url }, {}, Buffer.from('{}'))).toMatchObject({ status: null, error: 'tls_error' });
      fs.writeFileSync(caFile, fs.readFileSync(inject('tls').caFile));
      expect(await client.post({ endpointId: 'ep_dev', url }, {}, Buffer.from('{}'))).toMatchObject({ status: 200, error: null });
    } finally {
      await client.close();
    }
  });
});
