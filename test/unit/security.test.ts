import crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { normalizeCategories } from '../../src/core/categories.js';
import { isScriptHostAcknowledgement } from '../../src/delivery/send-webhook.js';
import { generateApiKey, hashApiKey } from '../../src/security/api-key.js';
import { createDestinationPolicy, urlRefusal } from '../../src/security/destination-policy.js';
import { createSecretBox, rememberingOpener } from '../../src/security/secret-box.js';
import { generateSigningSecret, signBody, verifyHmacHex } from '../../src/security/signature.js';
import { staticResolver } from '../support/harness.js';

describe('destination policy', () => {
  const policy = createDestinationPolicy({
    resolver: staticResolver({
      'ok.example': ['93.184.215.14'],
      'rebind.example': ['93.184.215.14', '127.0.0.1'],
      'v6.example': ['2001:4860:4860::8888'],
    }),
  });

  it.each([
    ['127.0.0.1', 'loopback'],
    ['10.0.0.1', 'private'],
    ['172.16.5.4', 'private'],
    ['192.168.0.1', 'private'],
    ['169.254.169.254', 'link-local'],
    ['100.64.0.1', 'carrier-grade NAT'],
    ['224.0.0.1', 'multicast'],
    ['0.0.0.0', 'unspecified'],
    ['192.0.2.1', 'reserved'],
    ['::1', 'loopback'],
    ['fe80::1', 'link-local'],
    ['fc00::1', 'private'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:10.0.0.1', 'private'],
    ['2002:7f00:1::', 'reserved'],
  ])('refuses %s (%s)', (address, word) => {
    expect(policy.refusal(address)).toContain(word);
  });

  it.each(['93.184.215.14', '8.8.8.8', '2001:4860:4860::8888', '::ffff:8.8.8.8'])('allows public %s', (address) => {
    expect(policy.refusal(address)).toBeUndefined();
  });

  // One row per special-purpose range (IANA IPv4 and IPv6 registries): an address inside is
  // refused, a public address next to it is allowed. IPv6 neighbours of ranges outside 2000::/3
  // are the nearest global unicast addresses, since nothing else is publicly routed.
  it.each([
    ['0.0.0.0/8', '0.255.255.255', '1.0.0.1'],
    ['10.0.0.0/8', '10.255.0.1', '11.0.0.1'],
    ['100.64.0.0/10', '100.127.255.254', '100.128.0.1'],
    ['127.0.0.0/8', '127.1.2.3', '128.0.0.1'],
    ['169.254.0.0/16', '169.254.1.1', '169.255.0.1'],
    ['172.16.0.0/12', '172.31.255.1', '172.32.0.1'],
    ['192.0.0.0/24', '192.0.0.170', '192.0.1.1'],
    ['192.0.2.0/24', '192.0.2.200', '192.0.3.1'],
    ['192.31.196.0/24', '192.31.196.1', '192.31.197.1'],
    ['192.52.193.0/24', '192.52.193.1', '192.52.194.1'],
    ['192.88.99.0/24', '192.88.99.1', '192.88.100.1'],
    ['192.168.0.0/16', '192.168.255.1', '192.169.0.1'],
    ['192.175.48.0/24', '192.175.48.6', '192.175.49.1'],
    ['198.18.0.0/15', '198.19.255.1', '198.20.0.1'],
    ['198.51.100.0/24', '198.51.100.7', '198.51.101.1'],
    ['203.0.113.0/24', '203.0.113.9', '203.0.114.1'],
    ['224.0.0.0/4', '239.255.255.250', '223.255.255.254'],
    ['240.0.0.0/4', '250.1.2.3', '223.1.2.3'],
    ['255.255.255.255/32', '255.255.255.255', '223.255.255.255'],
    ['::/128', '::', '2600::1'],
    ['::1/128', '::1', '2600::1'],
    ['::/96 (IPv4-compatible)', '::7f00:1', '2600::7f00:1'],
    ['::/96 (IPv4-compatible, dotted)', '::127.0.0.1', '2600::127.0.0.1'],
    ['::/96 (IPv4-compatible, public v4)', '::808:808', '2600::808:808'],
    ['::/96 (IPv4-compatible, dotted public v4)', '::8.8.8.8', '::ffff:8.8.8.8'],
    ['::ffff:0:0/96 (mapped, private v4)', '::ffff:10.0.0.1', '::ffff:8.8.8.8'],
    ['::ffff:0:0:0/96 (IPv4-translated)', '::ffff:0:808:808', '2600::808:808'],
    ['64:ff9b::/96 (NAT64, private v4)', '64:ff9b::a00:1', '64:ff9b::808:808'],
    ['64:ff9b:1::/48', '64:ff9b:1::808:808', '2600::1'],
    ['100::/64', '100::1', '2600::1'],
    ['100:0:0:1::/64', '100:0:0:1::1', '2600::1'],
    ['2001::/32 (Teredo)', '2001:0:4136:e378:8000:63bf:3fff:fdd2', '2001:200::1'],
    ['2001::/23', '2001:1ff::1', '2001:200::1'],
    ['2001:db8::/32', '2001:db8::1', '2001:db9::1'],
    ['2002::/16 (6to4)', '2002:808:808::1', '2003::1'],
    ['2620:4f:8000::/48', '2620:4f:8000::1', '2620:4f:8001::1'],
    ['3fff::/20', '3fff:fff::1', '3fff:1000::1'],
    ['5f00::/16', '5f00::1', '3fff:ffff::1'],
    ['fc00::/7', 'fdff::1', '2600::1'],
    ['fe80::/10', 'febf::1', '2600::1'],
    ['fec0::/10', 'fec0::1', '2600::1'],
    ['ff00::/8', 'ff02::1', '2600::1'],
    ['outside 2000::/3', '4000::1', '3fff:ffff::1'],
  ])('%s: refuses %s, allows %s', (_range, inside, neighbour) => {
    expect(policy.refusal(inside)).toBeDefined();
    expect(policy.refusal(neighbour)).toBeUndefined();
  });

  it.each([
    'https://[::7f00:1]/',
    'https://[::127.0.0.1]/',
    'https://[::a00:1]/',
    'https://[64:ff9b::7f00:1]/',
    'https://[2002:7f00:1::1]/',
  ])('refuses the embedded-IPv4 url %s', async (url) => {
    expect(await urlRefusal(policy, url)).toMatch(/is (a|an) .* address/);
  });

  it('lets only the named private ranges through', () => {
    const p = createDestinationPolicy({ allowCidrs: ['127.0.0.0/8'] });
    expect(p.refusal('127.0.0.1')).toBeUndefined();
    expect(p.refusal('10.0.0.1')).toContain('private');
    expect(p.refusal('::1')).toContain('loopback');
    // The allowance covers the IPv4 address a mapped or NAT64 form carries, never IPv4-compatible forms.
    expect(p.refusal('::ffff:127.0.0.1')).toBeUndefined();
    expect(p.refusal('64:ff9b::7f00:1')).toBeUndefined();
    expect(p.refusal('::7f00:1')).toContain('IPv4-compatible');
  });

  it('checks every address a name resolves to', async () => {
    await expect(urlRefusal(policy, 'https://ok.example/h')).resolves.toBeUndefined();
    await expect(urlRefusal(policy, 'https://v6.example/h')).resolves.toBeUndefined();
    expect(await urlRefusal(policy, 'https://rebind.example/h')).toContain('loopback');
    expect(await urlRefusal(policy, 'https://nowhere.example/h')).toContain('does not resolve');
    expect(await urlRefusal(policy, 'http://ok.example/h')).toContain('https');
    expect(await urlRefusal(policy, 'https://user:pw@ok.example/h')).toContain('credentials');
    expect(await urlRefusal(policy, 'https://[::ffff:127.0.0.1]/h')).toContain('loopback');
    expect(await urlRefusal(policy, 'not a url')).toContain('valid');
  });
});

describe('secrets and signatures', () => {
  it('encrypts with authentication: ciphertext differs per seal and tampering fails', () => {
    const box = createSecretBox(crypto.randomBytes(32).toString('base64'));
    const a = box.seal('whsec_abc');
    const b = box.seal('whsec_abc');
    expect(a.equals(b)).toBe(false);
    expect(a.includes(Buffer.from('whsec_abc'))).toBe(false);
    expect(box.open(a)).toBe('whsec_abc');
    a[a.length - 1]! ^= 1;
    expect(() => box.open(a)).toThrow();
    expect(() => createSecretBox(Buffer.alloc(16).toString('base64'))).toThrow(/32 bytes/);
  });

  it('a remembering opener decrypts each ciphertext once, and a rotated secret (a new ciphertext) at its first use', () => {
    const box = createSecretBox(crypto.randomBytes(32).toString('base64'));
    let opened = 0;
    const counting = { open: (c: Buffer) => (opened++, box.open(c)) };
    const secrets = rememberingOpener(counting);
    const [old, auth, rotated] = [box.seal('whsec_old'), box.seal('Bearer t'), box.seal('whsec_new')];
    for (let i = 0; i < 5; i++) {
      // Each POST reads the endpoint afresh: equal bytes in another Buffer.
      expect(secrets.open(Buffer.from(old))).toBe('whsec_old');
      expect(secrets.open(Buffer.from(auth))).toBe('Bearer t');
    }
    expect(opened).toBe(2);
    expect(secrets.open(rotated)).toBe('whsec_new');
    expect(opened).toBe(3);
    // A Buffer the caller reuses and changes later does not change what was remembered.
    const fresh = rememberingOpener(counting);
    const reused = Buffer.from(rotated);
    fresh.open(reused);
    reused.fill(0);
    expect(fresh.open(Buffer.from(rotated))).toBe('whsec_new');
    expect(opened).toBe(4);
  });

  it('signs the exact bytes, lowercase hex, keyed by the whole secret string', () => {
    const secret = 'whsec_test_secret_value';
    const body = Buffer.from('{"event":"webhook.test"}');
    const expected = crypto.createHmac('sha256', secret).update(body).digest('hex');
    expect(signBody(secret, body)).toBe(expected);
    expect(signBody(secret, body)).toMatch(/^[0-9a-f]{64}$/);
    expect(signBody(secret, Buffer.from('{"event": "webhook.test"}'))).not.toBe(expected);
  });

  it('verifies hex HMACs in constant time and rejects malformed input', () => {
    const body = Buffer.from('payload');
    const good = crypto.createHmac('sha256', 's').update(body).digest('hex');
    expect(verifyHmacHex('s', body, good)).toBe(true);
    expect(verifyHmacHex('s', body, good.toUpperCase())).toBe(true);
    expect(verifyHmacHex('s', body, good.slice(0, 63) + (good.endsWith('0') ? '1' : '0'))).toBe(false);
    expect(verifyHmacHex('s', body, 'abc')).toBe(false);
    expect(verifyHmacHex('s', body, '')).toBe(false);
  });

  it('generates whsec_ secrets of 32 random bytes and hashed API keys', () => {
    const s = generateSigningSecret();
    expect(s).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(s.slice(6), 'base64')).toHaveLength(32);
    const k = generateApiKey('sandbox');
    expect(k.key.startsWith('wh_sandbox_')).toBe(true);
    expect(k.hash.equals(hashApiKey(k.key))).toBe(true);
    expect(k.hash.includes(Buffer.from(k.key))).toBe(false);
  });
});

describe('categories and the hosted-script acknowledgement', () => {
  it('keeps known categories once each', () => {
    expect(normalizeCategories(['statuses', 'bogus', 'messages', 'statuses'])).toEqual(['messages', 'statuses']);
    expect(normalizeCategories(['bogus'])).toEqual([]);
    // SPEC 4.1: values outside the categories are discarded whatever their type.
    expect(normalizeCategories(['crm', 5, null, { messages: true }, ['account'], true, 'account'])).toEqual(['crm', 'account']);
    expect(normalizeCategories([5, null])).toEqual([]);
  });

  it('accepts only script.google.com answering 302 to script.googleusercontent.com', () => {
    expect(isScriptHostAcknowledgement('https://script.google.com/macros/s/x/exec', 302, 'https://script.googleusercontent.com/echo')).toBe(
      true,
    );
    expect(isScriptHostAcknowledgement('https://script.google.com/macros/s/x/exec', 301, 'https://script.googleusercontent.com/echo')).toBe(
      false,
    );
    expect(isScriptHostAcknowledgement('https://script.google.com/macros/s/x/exec', 302, 'https://evil.example/')).toBe(false);
    expect(isScriptHostAcknowledgement('https://example.com/hook', 302, 'https://script.googleusercontent.com/echo')).toBe(false);
  });
});
