/** A private CA and a leaf for 127.0.0.1/localhost, for local HTTPS receivers (benchmarks, local trials). */
import fs from 'node:fs';
import path from 'node:path';
import { generate } from 'selfsigned';

export interface LocalTls {
  /** The CA certificate's file: what NODE_EXTRA_CA_CERTS names for the processes that must trust the receiver. */
  caFile: string;
  ca: string;
  cert: string;
  key: string;
}

/** `names` are more DNS names the leaf answers for (a test resolver's receiver names, say). */
export async function makeLocalTls(dir: string, name = 'local', names: string[] = []): Promise<LocalTls> {
  fs.mkdirSync(dir, { recursive: true });
  const ca = await generate([{ name: 'commonName', value: `${name} CA` }], {
    keySize: 2048,
    algorithm: 'sha256',
    extensions: [
      { name: 'basicConstraints', cA: true, critical: true },
      { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true },
    ],
  });
  const leaf = await generate([{ name: 'commonName', value: '127.0.0.1' }], {
    keySize: 2048,
    algorithm: 'sha256',
    ca: { key: ca.private, cert: ca.cert },
    extensions: [
      {
        name: 'subjectAltName',
        altNames: [{ type: 2, value: 'localhost' }, ...names.map((value) => ({ type: 2 as const, value })), { type: 7, ip: '127.0.0.1' }],
      },
      { name: 'extKeyUsage', serverAuth: true },
    ],
  });
  const caFile = path.join(dir, 'ca.pem');
  fs.writeFileSync(caFile, ca.cert);
  return { caFile, ca: ca.cert, cert: leaf.cert, key: leaf.private };
}
