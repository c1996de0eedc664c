/**
 * How the API's client, the worker and the schedules connect to Temporal: the address, TLS
 * (server CA, server name, client certificate for mTLS) and a Temporal Cloud API key, built
 * once from the configuration and checked at start so a wrong path or a swapped key fails with
 * a message naming the setting, not with a TLS handshake error minutes later.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import type { TLSConfig } from '@temporalio/common/lib/internal-non-workflow';
import { ConfigError, requireSetting, type Config } from '../lib/config';

/** Accepted by both `Connection` (@temporalio/client) and `NativeConnection` (@temporalio/worker). */
export interface TemporalConnectionOptions {
  address: string;
  tls?: TLSConfig;
  apiKey?: string;
}

const PEM_BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----[\s\S]+?-----END \1-----/;

/** A setting's PEM text: the value itself when it holds a PEM block, else the file it names. */
function readPem(setting: string, value: string): { pem: string; source: string } {
  if (value.includes('-----BEGIN')) {
    if (!PEM_BLOCK.test(value)) throw new ConfigError(`${setting}: the PEM text is incomplete (no matching -----END line)`);
    return { pem: value, source: 'the PEM text in the setting' };
  }
  let content: string;
  try {
    content = fs.readFileSync(value, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new ConfigError(`${setting}: cannot read the file ${value} (${code ?? (err as Error).message}); give a readable file path or the PEM text itself`);
  }
  if (!PEM_BLOCK.test(content)) throw new ConfigError(`${setting}: ${value} is not a PEM file (no -----BEGIN ...----- block)`);
  return { pem: content, source: value };
}

function parseCertificate(setting: string, value: string): { pem: string; cert: crypto.X509Certificate } {
  const { pem, source } = readPem(setting, value);
  try {
    return { pem, cert: new crypto.X509Certificate(pem) };
  } catch (err) {
    throw new ConfigError(`${setting}: ${source} does not hold a valid certificate (${(err as Error).message})`);
  }
}

function parsePrivateKey(setting: string, value: string): { pem: string; key: crypto.KeyObject } {
  const { pem, source } = readPem(setting, value);
  try {
    return { pem, key: crypto.createPrivateKey(pem) };
  } catch (err) {
    throw new ConfigError(`${setting}: ${source} does not hold a valid unencrypted private key (${(err as Error).message})`);
  }
}

/** The TLS part, or undefined for a plain-text connection. */
function tlsOptions(config: Config): TLSConfig | undefined {
  const { enabled, cert, key, ca, serverName } = config.temporalTls;
  const anyTlsSetting = Boolean(cert || key || ca || serverName);
  if (enabled === false) {
    if (anyTlsSetting) throw new ConfigError('TEMPORAL_TLS=false contradicts the TEMPORAL_TLS_* settings that are set; remove one or the other');
    if (config.temporalApiKey) throw new ConfigError('TEMPORAL_API_KEY needs TLS (Temporal Cloud only accepts it over TLS); remove TEMPORAL_TLS=false');
    return undefined;
  }
  if (!enabled && !anyTlsSetting && !config.temporalApiKey) return undefined;
  if (key && !cert) throw new ConfigError('TEMPORAL_TLS_KEY is set without TEMPORAL_TLS_CERT: mTLS needs the client certificate and its private key');
  if (cert && !key) throw new ConfigError('TEMPORAL_TLS_CERT is set without TEMPORAL_TLS_KEY: mTLS needs the client certificate and its private key');

  const tls: TLSConfig = {};
  if (serverName) tls.serverNameOverride = serverName;
  if (ca) tls.serverRootCACertificate = Buffer.from(parseCertificate('TEMPORAL_TLS_CA', ca).pem);
  if (cert && key) {
    const certificate = parseCertificate('TEMPORAL_TLS_CERT', cert);
    const privateKey = parsePrivateKey('TEMPORAL_TLS_KEY', key);
    if (!certificate.cert.checkPrivateKey(privateKey.key)) {
      throw new ConfigError('TEMPORAL_TLS_KEY is not the private key of the certificate in TEMPORAL_TLS_CERT');
    }
    if (new Date(certificate.cert.validTo).getTime() < Date.now()) {
      throw new ConfigError(`TEMPORAL_TLS_CERT: the client certificate expired on ${certificate.cert.validTo}`);
    }
    tls.clientCertPair = { crt: Buffer.from(certificate.pem), key: Buffer.from(privateKey.pem) };
  }
  return tls;
}

/**
 * The validated connection options; throws ConfigError naming the setting when TEMPORAL_ADDRESS
 * is missing or a TLS file is unreadable, not PEM, or does not match.
 */
export function temporalConnectionOptions(config: Config): TemporalConnectionOptions {
  const address = requireSetting(config.temporalAddress, 'TEMPORAL_ADDRESS');
  const tls = tlsOptions(config);
  return {
    address,
    ...(tls ? { tls } : {}),
    ...(config.temporalApiKey ? { apiKey: config.temporalApiKey } : {}),
  };
}

/** For logs: where and how we connect, without secrets. */
export function describeTemporalConnection(options: TemporalConnectionOptions): Record<string, unknown> {
  return {
    temporalAddress: options.address,
    tls: options.tls ? (options.tls.clientCertPair ? 'mtls' : 'tls') : 'off',
    apiKey: options.apiKey ? 'set' : 'unset',
  };
}
