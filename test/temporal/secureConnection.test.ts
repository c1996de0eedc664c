import fs from 'node:fs';
import { Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { ConfigError, loadConfig } from '../../lib/config';
import { temporalConnectionOptions } from '../../temporal/connectionOptions';
import { makeTestCertificates, type TestCertificates } from '../support/certificates';
import { startMtlsProxy, type TlsProxy } from '../support/tlsProxy';
import { startTestStack, testEnv, type TestStack } from '../support/testStack';
import { spawnService } from '../support/processes';
import { accountWithProject } from '../support/accounts';
import { uploadFile } from '../support/multipart';
import { eventually } from '../support/eventually';

let certs: TestCertificates;
beforeAll(() => {
  certs = makeTestCertificates();
});
afterAll(() => certs.remove());

const optionsFor = (env: Record<string, string>) => temporalConnectionOptions(loadConfig(testEnv(env)));

describe('TEMPORAL_TLS_* and TEMPORAL_API_KEY are checked at start', () => {
  it('names the setting when a file is unreadable, not PEM, or the key does not belong to the certificate', () => {
    expect(() => optionsFor({ TEMPORAL_TLS_CERT: '/nonexistent/client.crt', TEMPORAL_TLS_KEY: certs.clientKey })).toThrow(
      /TEMPORAL_TLS_CERT: cannot read the file \/nonexistent\/client.crt \(ENOENT\)/,
    );
    const notPem = `${certs.dir}/not-pem.txt`;
    fs.writeFileSync(notPem, 'hello');
    expect(() => optionsFor({ TEMPORAL_TLS_CA: notPem })).toThrow(/TEMPORAL_TLS_CA: .*not-pem.txt is not a PEM file/);
    expect(() => optionsFor({ TEMPORAL_TLS_CA: certs.clientKey })).toThrow(/TEMPORAL_TLS_CA: .* does not hold a valid certificate/);
    expect(() => optionsFor({ TEMPORAL_TLS_KEY: certs.clientKey })).toThrow(/TEMPORAL_TLS_KEY is set without TEMPORAL_TLS_CERT/);
    expect(() => optionsFor({ TEMPORAL_TLS_CERT: certs.clientCert })).toThrow(/TEMPORAL_TLS_CERT is set without TEMPORAL_TLS_KEY/);
    expect(() => optionsFor({ TEMPORAL_TLS_CERT: certs.clientCert, TEMPORAL_TLS_KEY: certs.otherKey })).toThrow(
      /TEMPORAL_TLS_KEY is not the private key of the certificate in TEMPORAL_TLS_CERT/,
    );
    expect(() => optionsFor({ TEMPORAL_TLS: 'false', TEMPORAL_API_KEY: 'k' })).toThrow(ConfigError);
  });

  it('takes each value as a file path or as the PEM text itself, and turns TLS on for an API key', () => {
    const fromFiles = optionsFor({
      TEMPORAL_TLS_CERT: certs.clientCert,
      TEMPORAL_TLS_KEY: certs.clientKey,
      TEMPORAL_TLS_CA: certs.caCert,
      TEMPORAL_TLS_SERVER_NAME: 'temporal.internal',
    });
    const fromText = optionsFor({
      TEMPORAL_TLS_CERT: fs.readFileSync(certs.clientCert, 'utf8'),
      TEMPORAL_TLS_KEY: fs.readFileSync(certs.clientKey, 'utf8'),
      TEMPORAL_TLS_CA: fs.readFileSync(certs.caCert, 'utf8'),
      TEMPORAL_TLS_SERVER_NAME: 'temporal.internal',
    });
    expect(fromText).toEqual(fromFiles);
    expect(fromFiles.tls?.serverNameOverride).toBe('temporal.internal');
    expect(fromFiles.tls?.clientCertPair?.crt.toString()).toContain('BEGIN CERTIFICATE');

    expect(optionsFor({})).toEqual({ address: process.env.MAILROOM_TEST_TEMPORAL_ADDRESS });
    expect(optionsFor({ TEMPORAL_API_KEY: 'cloud-key' })).toMatchObject({ apiKey: 'cloud-key', tls: {} });
    const keyFile = `${certs.dir}/api-key`;
    fs.writeFileSync(keyFile, 'key-from-file\n');
    expect(optionsFor({ TEMPORAL_API_KEY_FILE: keyFile }).apiKey).toBe('key-from-file');
  });

  it('stops the worker at start with one JSON line naming the bad setting', async () => {
    const worker = spawnService('worker/main.ts', {
      ...testEnv({ TEMPORAL_TLS_CERT: certs.clientCert, TEMPORAL_TLS_KEY: certs.otherKey }),
      DATABASE_URL: 'postgres://unused',
    });
    expect(await worker.exited).toBe(1);
    expect(worker.lines).toEqual([expect.objectContaining({ level: 'fatal', msg: expect.stringMatching(/TEMPORAL_TLS_KEY is not the private key/) })]);
  }, 180_000); // a cold child process on a loaded 2-core machine
});

describe('a Temporal frontend that requires mTLS', () => {
  let proxy: TlsProxy;
  let stack: TestStack | undefined;
  beforeAll(async () => {
    proxy = await startMtlsProxy({ target: process.env.MAILROOM_TEST_TEMPORAL_ADDRESS!, cert: certs.serverCert, key: certs.serverKey, ca: certs.caCert });
  });
  afterAll(async () => {
    await stack?.stop();
    await proxy.close();
  });

  it('refuses a client without a certificate, with a TLS error', async () => {
    const before = proxy.refusedHandshakes;
    const tls = { serverRootCACertificate: fs.readFileSync(certs.caCert) };
    await expect(NativeConnection.connect({ address: proxy.address, tls })).rejects.toThrow();
    await expect(Connection.connect({ address: proxy.address, tls, connectTimeout: 3000 })).rejects.toThrow();
    expect(proxy.refusedHandshakes).toBeGreaterThan(before);
  });

  it('runs an import end to end through the API and the worker with the client certificate', async () => {
    stack = await startTestStack({
      env: {
        TEMPORAL_ADDRESS: proxy.address,
        TEMPORAL_TLS_CA: certs.caCert,
        // One as PEM text, as from a secret injected into the environment.
        TEMPORAL_TLS_CERT: fs.readFileSync(certs.clientCert, 'utf8'),
        TEMPORAL_TLS_KEY: certs.clientKey,
        TEMPORAL_TLS_SERVER_NAME: 'localhost',
      },
    });
    const { project } = await accountWithProject(stack.http);
    const csv = ['email,firstName', ...Array.from({ length: 20 }, (_, i) => `mtls${i}@example.com,Row${i}`)].join('\n');
    const res = await uploadFile(stack.http.baseUrl, '/contacts/import', project.secretKey, { name: 'c.csv', content: csv });
    expect(res.status).toBe(202);
    const job = await eventually(async () => {
      const r = await stack!.http.get(`/contacts/import/${res.body.jobId}`, { key: project.secretKey });
      if (r.body.status !== 'COMPLETED') throw new Error(`still ${r.body.status}`);
      return r.body;
    }, 60_000);
    expect(job).toMatchObject({ status: 'COMPLETED', total: 20 });
    expect(proxy.acceptedConnections).toBeGreaterThanOrEqual(2); // the API's client and the worker
    expect((await stack.http.get('/health')).body).toEqual({ status: 'ok', database: 'ok', temporal: 'ok' });
  }, 120_000);
});
