/** Configuration is parsed once, from the environment it is given. */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/runtime/config.js';

/** The documented default of WORKER_MAX_CACHED_WORKFLOWS (README's configuration table). */
const DEFAULT_CACHE = 250;

describe('loadConfig', () => {
  it('has the documented defaults for an empty environment', () => {
    expect(loadConfig({})).toMatchObject({
      port: 3000,
      dataDir: path.resolve('.data'),
      temporalNamespace: 'default',
      taskQueue: 'webhooks',
      devServerPorts: { frontend: 7233, ui: 8233 },
      endpointLimit: 50,
      deliveryTimeoutMs: 10_000,
      directReportEveryMs: 300_000,
      rateLimit: { capacity: 100, refillPerSecond: 20 },
      allowPrivateCidrs: [],
      trustProxy: false,
      devMode: false,
      devCaFile: undefined,
    });
  });

  it('reads numbers, lists and flags from the environment it is given, not the process', () => {
    const config = loadConfig({
      PORT: '8080',
      ENDPOINT_LIMIT: '7',
      RATE_LIMIT_BURST: '5',
      RATE_LIMIT_PER_SECOND: '2',
      WEBHOOK_ALLOW_PRIVATE_CIDRS: '10.0.0.0/8, 192.168.0.0/16',
      TRUST_PROXY: '1',
      DATA_DIR: '/tmp/x',
      DIRECT_REPORT_EVERY_MS: '60000',
    });
    expect(config).toMatchObject({
      port: 8080,
      endpointLimit: 7,
      rateLimit: { capacity: 5, refillPerSecond: 2 },
      allowPrivateCidrs: ['10.0.0.0/8', '192.168.0.0/16'],
      trustProxy: true,
      dataDir: '/tmp/x',
      directReportEveryMs: 60_000,
    });
  });

  it("sizes the worker's workflow cache from WORKER_MAX_CACHED_WORKFLOWS, 0 included, and refuses a bad size", () => {
    expect(loadConfig({}).workerMaxCachedWorkflows).toBe(DEFAULT_CACHE);
    expect(loadConfig({ WORKER_MAX_CACHED_WORKFLOWS: '' }).workerMaxCachedWorkflows).toBe(DEFAULT_CACHE);
    expect(loadConfig({ WORKER_MAX_CACHED_WORKFLOWS: '1000' }).workerMaxCachedWorkflows).toBe(1000);
    expect(loadConfig({ WORKER_MAX_CACHED_WORKFLOWS: '0' }).workerMaxCachedWorkflows).toBe(0);
    for (const bad of ['-1', '2.5', 'many']) {
      expect(() => loadConfig({ WORKER_MAX_CACHED_WORKFLOWS: bad })).toThrow(/WORKER_MAX_CACHED_WORKFLOWS/);
    }
  });

  it('warms each process up with WARM_UP_REQUESTS synthetic requests, 2,000 unless set, 0 for none, at most 20,000', () => {
    expect(loadConfig({}).warmUpRequests).toBe(2_000);
    expect(loadConfig({ WARM_UP_REQUESTS: '500' }).warmUpRequests).toBe(500);
    expect(loadConfig({ WARM_UP_REQUESTS: '0' }).warmUpRequests).toBe(0);
    expect(loadConfig({ WARM_UP_REQUESTS: '20000' }).warmUpRequests).toBe(20_000);
    for (const bad of ['-1', '2.5', 'lots', '20001']) expect(() => loadConfig({ WARM_UP_REQUESTS: bad })).toThrow(/WARM_UP_REQUESTS/);
  });

  it('runs direct sessions unless DIRECT_SESSIONS is false or 0, and refuses anything else', () => {
    expect(loadConfig({}).directSessions).toBe(true);
    expect(loadConfig({ DIRECT_SESSIONS: '' }).directSessions).toBe(true);
    expect(loadConfig({ DIRECT_SESSIONS: 'true' }).directSessions).toBe(true);
    expect(loadConfig({ DIRECT_SESSIONS: 'false' }).directSessions).toBe(false);
    expect(loadConfig({ DIRECT_SESSIONS: '0' }).directSessions).toBe(false);
    expect(() => loadConfig({ DIRECT_SESSIONS: 'off' })).toThrow(/DIRECT_SESSIONS/);
  });

  it('stores payloads as gzip unless PAYLOAD_COMPRESSION says zlib, and refuses any other format', () => {
    expect(loadConfig({}).payloadCompression).toBe('gzip');
    expect(loadConfig({ PAYLOAD_COMPRESSION: '' }).payloadCompression).toBe('gzip');
    expect(loadConfig({ PAYLOAD_COMPRESSION: 'zlib' }).payloadCompression).toBe('zlib');
    expect(() => loadConfig({ PAYLOAD_COMPRESSION: 'brotli' })).toThrow(/PAYLOAD_COMPRESSION/);
  });

  it('reads HOST as given; unset or empty leaves the listening address to the launcher', () => {
    expect(loadConfig({ HOST: '::1' }).host).toBe('::1');
    expect(loadConfig({}).host).toBeUndefined();
  });

  it('treats an empty value as unset', () => {
    expect(loadConfig({ PORT: '', HOST: '', DATABASE_URL: '', WEBHOOK_ALLOW_PRIVATE_CIDRS: '' })).toMatchObject({
      port: 3000,
      host: undefined,
      databaseUrl: undefined,
      allowPrivateCidrs: [],
    });
  });

  it('refuses bad values at start, naming every one of them', () => {
    expect(() => loadConfig({ PORT: '70000', ENDPOINT_LIMIT: '-1', DELIVERY_TIMEOUT_MS: 'ten', TRUST_PROXY: 'yes' })).toThrow(
      /PORT[\s\S]*ENDPOINT_LIMIT[\s\S]*DELIVERY_TIMEOUT_MS[\s\S]*TRUST_PROXY/,
    );
  });

  it('reads DELIVERY_RETENTION_DAYS (90 unset) and refuses one outside 1 to 3650 or not whole', () => {
    expect(loadConfig({}).deliveryRetentionDays).toBe(90);
    expect(loadConfig({ DELIVERY_RETENTION_DAYS: '3650' }).deliveryRetentionDays).toBe(3650);
    expect(loadConfig({ DELIVERY_RETENTION_DAYS: '1' }).deliveryRetentionDays).toBe(1);
    for (const bad of ['0', '3651', '7.5', 'ninety'])
      expect(() => loadConfig({ DELIVERY_RETENTION_DAYS: bad }), bad).toThrow(/DELIVERY_RETENTION_DAYS: .*(1 to 3650|number)/);
  });

  it('dev mode adds the loopback ranges and trusts its CA file; without it the CA file is ignored', () => {
    expect(loadConfig({ WEBHOOKS_DEV_MODE: '1', WEBHOOK_ALLOW_PRIVATE_CIDRS: '10.0.0.0/8', WEBHOOKS_DEV_CA_FILE: 'ca.pem' })).toMatchObject(
      {
        devMode: true,
        allowPrivateCidrs: ['10.0.0.0/8', '127.0.0.0/8', '::1/128'],
        devCaFile: path.resolve('ca.pem'),
      },
    );
    expect(loadConfig({ WEBHOOKS_DEV_CA_FILE: 'ca.pem' })).toMatchObject({ devMode: false, devCaFile: undefined });
  });

  it('reads the provider API url and token; a url that is not http(s) is refused', () => {
    expect(loadConfig({ PROVIDER_API_URL: 'http://127.0.0.1:4100/v24.0', PROVIDER_ACCESS_TOKEN: 't' })).toMatchObject({
      providerApiUrl: 'http://127.0.0.1:4100/v24.0',
      providerAccessToken: 't',
    });
    expect(loadConfig({})).toMatchObject({ providerApiUrl: undefined, providerAccessToken: undefined });
    expect(() => loadConfig({ PROVIDER_API_URL: 'graph.example/v24.0' })).toThrow(/PROVIDER_API_URL/);
  });
});
