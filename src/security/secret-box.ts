/**
 * Authenticated encryption (AES-256-GCM) of secrets at rest: endpoint signing secrets and
 * Authorization values. Layout of a ciphertext: version(1) | iv(12) | tag(16) | data.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

const VERSION = 1;

export interface SecretBox {
  seal(plaintext: string): Buffer;
  open(ciphertext: Buffer): string;
}

export function createSecretBox(keyBase64: string): SecretBox {
  const key = Buffer.from(keyBase64, 'base64');
  if (key.length !== 32) throw new Error('SECRETS_ENCRYPTION_KEY must be 32 bytes, base64-encoded');
  return {
    seal(plaintext) {
      const iv = crypto.randomBytes(12);
      const cipher = crypto.createCipheriv('aes-256-gcm', key, iv);
      const data = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
      return Buffer.concat([Buffer.from([VERSION]), iv, cipher.getAuthTag(), data]);
    },
    open(ciphertext) {
      if (ciphertext[0] !== VERSION) throw new Error('unknown secret ciphertext version');
      const decipher = crypto.createDecipheriv('aes-256-gcm', key, ciphertext.subarray(1, 13));
      decipher.setAuthTag(ciphertext.subarray(13, 29));
      return Buffer.concat([decipher.update(ciphertext.subarray(29)), decipher.final()]).toString('utf8');
    },
  };
}

/**
 * The configured key, or in development a key generated once into the data folder
 * (mode 0600). Production sets SECRETS_ENCRYPTION_KEY.
 */
export function loadOrCreateEncryptionKey(configured: string | undefined, dataDir: string): string {
  if (configured) return configured;
  const file = path.join(dataDir, 'secrets.key');
  if (fs.existsSync(file)) return fs.readFileSync(file, 'utf8').trim();
  fs.mkdirSync(dataDir, { recursive: true });
  const key = crypto.randomBytes(32).toString('base64');
  // 'wx' fails if another process created it first; then read theirs.
  try {
    fs.writeFileSync(file, key, { mode: 0o600, flag: 'wx' });
    return key;
  } catch {
    return fs.readFileSync(file, 'utf8').trim();
  }
}

/**
 * `box.open` remembering the last ciphertexts it opened (a session's secret and Authorization
 * value): a session POSTs to one endpoint, so this spares a decryption per POST. A rotated
 * secret is a new ciphertext, opened afresh at its first use, so a rotation still applies to
 * the next attempt.
 */
export function rememberingOpener(box: Pick<SecretBox, 'open'>, size = 2): Pick<SecretBox, 'open'> {
  const opened: { ciphertext: Buffer; plaintext: string }[] = [];
  return {
    open(ciphertext) {
      const hit = opened.find((o) => o.ciphertext.equals(ciphertext));
      if (hit) return hit.plaintext;
      const plaintext = box.open(ciphertext);
      opened.unshift({ ciphertext: Buffer.from(ciphertext), plaintext });
      opened.length = Math.min(opened.length, size);
      return plaintext;
    },
  };
}
