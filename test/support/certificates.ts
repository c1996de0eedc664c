/**
 * A throwaway certificate authority with a server certificate (for 127.0.0.1 / localhost) and a
 * client certificate, made with the openssl CLI, for tests of TLS and mTLS connections.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export interface TestCertificates {
  dir: string;
  /** File paths. */
  caCert: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
  /** A second, unrelated key (does not match clientCert). */
  otherKey: string;
  remove(): void;
}

function openssl(args: string[], cwd: string): void {
  execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
}

function newKey(cwd: string, file: string): void {
  openssl(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', file], cwd);
}

/** A certificate for `cn` signed by the CA, with the given extensions. */
function signed(cwd: string, name: string, cn: string, extensions: string): void {
  newKey(cwd, `${name}.key`);
  openssl(['req', '-new', '-key', `${name}.key`, '-subj', `/CN=${cn}`, '-out', `${name}.csr`], cwd);
  fs.writeFileSync(path.join(cwd, `${name}.ext`), extensions);
  openssl(
    [
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      'ca.crt',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-days',
      '2',
      '-extfile',
      `${name}.ext`,
      '-out',
      `${name}.crt`,
    ],
    cwd,
  );
}

export function makeTestCertificates(): TestCertificates {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mailroom-certs-'));
  newKey(dir, 'ca.key');
  openssl(['req', '-x509', '-new', '-key', 'ca.key', '-subj', '/CN=Mailroom test CA', '-days', '2', '-out', 'ca.crt'], dir);
  signed(dir, 'server', 'localhost', 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n');
  signed(dir, 'client', 'mailroom-worker', 'extendedKeyUsage=clientAuth\n');
  newKey(dir, 'other.key');
  const at = (file: string) => path.join(dir, file);
  return {
    dir,
    caCert: at('ca.crt'),
    serverCert: at('server.crt'),
    serverKey: at('server.key'),
    clientCert: at('client.crt'),
    clientKey: at('client.key'),
    otherKey: at('other.key'),
    remove: () => fs.rmSync(dir, { recursive: true, force: true }),
  };
}
