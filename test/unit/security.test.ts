import crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { normalizeCategories } from '../../core/categories.js';
import { isScriptHostAcknowledgement } from '../../delivery/send-webhook.js';
import { generateApiKey, hashApiKey } from '../../security/api-key.js';
import { createDestinationPolicy, urlRefusal } from '../../security/destination-policy.js';
import { createSecretBox } from '../../security/secret-box.js';
import { generateSigningSecret, signBody, verifyHmacHex } from '../../security/signature.js';
import { staticResolver } from '../support/harness.js';

describe('destination policy', () => {
  const policy = createDestinationPolicy({
    resolver: staticResolver({ 'ok.example': ['93.184.215.14'], 'rebind.example': ['93.184.215.14', '127.0.0.1'], 'v6.example': ['2001:4860:4860::8888'] }),
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

  it('lets only the named private ranges through', () => {
    const p = createDestinationPolicy({ allowCidrs: ['127.0.0.0/8'] });
    expect(p.refusal('127.0.0.1')).toBeUndefined();
    expect(p.refusal('10.0.0.1')).toContain('private');
    expect(p.refusal('::1')).toContain('loopback');
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
    expect(s).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);
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
  });

  it('accepts only script.google.com answering 302 to script.googleusercontent.com', () => {
    expect(isScriptHostAcknowledgement('https://script.google.com/macros/s/x/exec', 302, 'https://script.googleusercontent.com/echo')).toBe(true);
    expect(isScriptHostAcknowledgement('https://script.google.com/macros/s/x/exec', 301, 'https://script.googleusercontent.com/echo')).toBe(false);
    expect(isScriptHostAcknowledgement('https://script.google.com/macros/s/x/exec', 302, 'https://evil.example/')).toBe(false);
    expect(isScriptHostAcknowledgement('https://example.com/hook', 302, 'https://script.googleusercontent.com/echo')).toBe(false);
  });
});
