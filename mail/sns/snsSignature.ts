import crypto from 'node:crypto';
import type { SnsFetcher } from './snsFetcher';

/**
 * Amazon SNS message signatures, as AWS documents them ("Verifying the signatures of Amazon SNS
 * messages"): a string built from the message's fields in a fixed order, signed with
 * SHA1withRSA (SignatureVersion 1) or SHA256withRSA (SignatureVersion 2) by the certificate at
 * SigningCertURL, which must be served over https by an SNS endpoint.
 *
 * Written on node:crypto because the maintained npm validator (`sns-validator`) fetches the
 * certificate itself over https and cannot be given another fetcher, which the tests need.
 */
export type SnsMessageType = 'Notification' | 'SubscriptionConfirmation' | 'UnsubscribeConfirmation';

export interface SnsMessage {
  Type: SnsMessageType;
  MessageId: string;
  TopicArn: string;
  Message: string;
  Timestamp: string;
  SignatureVersion: string;
  Signature: string;
  SigningCertURL: string;
  Subject?: string;
  Token?: string;
  SubscribeURL?: string;
}

export class SnsMessageError extends Error {}
export class SnsSignatureError extends Error {}
/** The certificate could not be fetched: likely passing, so SNS should retry. */
export class SnsCertificateUnavailable extends Error {}

const TYPES = new Set<string>(['Notification', 'SubscriptionConfirmation', 'UnsubscribeConfirmation']);

/** The fields of each type that go into the string to sign, in AWS's order. */
const SIGNED_FIELDS: Record<SnsMessageType, Array<keyof SnsMessage>> = {
  Notification: ['Message', 'MessageId', 'Subject', 'Timestamp', 'TopicArn', 'Type'],
  SubscriptionConfirmation: ['Message', 'MessageId', 'SubscribeURL', 'Timestamp', 'Token', 'TopicArn', 'Type'],
  UnsubscribeConfirmation: ['Message', 'MessageId', 'SubscribeURL', 'Timestamp', 'Token', 'TopicArn', 'Type'],
};

/** A parsed SNS message body, with every field its type needs; throws SnsMessageError naming the first problem. */
export function parseSnsMessage(value: unknown): SnsMessage {
  if (!value || typeof value !== 'object' || Array.isArray(value)) throw new SnsMessageError('The body is not an SNS message (a JSON object)');
  const body = value as Record<string, unknown>;
  if (typeof body.Type !== 'string' || !TYPES.has(body.Type))
    throw new SnsMessageError('Type must be Notification, SubscriptionConfirmation or UnsubscribeConfirmation');
  const type = body.Type as SnsMessageType;
  const required = ['MessageId', 'TopicArn', 'Message', 'Timestamp', 'SignatureVersion', 'Signature', 'SigningCertURL'];
  if (type !== 'Notification') required.push('Token', 'SubscribeURL');
  for (const field of required) {
    if (typeof body[field] !== 'string' || body[field] === '') throw new SnsMessageError(`${field} is missing or not a string`);
  }
  if (body.Subject !== undefined && body.Subject !== null && typeof body.Subject !== 'string') throw new SnsMessageError('Subject must be a string');
  return body as unknown as SnsMessage;
}

export function stringToSign(message: SnsMessage): string {
  let out = '';
  for (const field of SIGNED_FIELDS[message.Type]) {
    const value = message[field];
    // Subject is signed only when the message has one.
    if (value === undefined || value === null) continue;
    out += `${field}\n${value}\n`;
  }
  return out;
}

const SNS_HOST = /^sns\.[a-z0-9-]+\.amazonaws\.com(\.cn)?$/;

/** An https URL on an SNS endpoint (`sns.<region>.amazonaws.com[.cn]`), default port, no credentials. */
export function isAmazonSnsUrl(value: string): boolean {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return false;
  }
  return url.protocol === 'https:' && SNS_HOST.test(url.hostname) && url.port === '' && !url.username && !url.password;
}

const MAX_CACHED_CERTIFICATES = 32;

/** Verifies SNS messages; certificates are fetched once per URL (SNS rotates them rarely) and kept. */
export class SnsVerifier {
  private readonly keys = new Map<string, Promise<crypto.KeyObject>>();

  constructor(private readonly fetcher: SnsFetcher) {}

  /** Throws SnsSignatureError for a message SNS did not sign, SnsCertificateUnavailable when the certificate cannot be read now. */
  async verify(message: SnsMessage): Promise<void> {
    const algorithm = message.SignatureVersion === '1' ? 'sha1' : message.SignatureVersion === '2' ? 'sha256' : null;
    if (!algorithm) throw new SnsSignatureError(`Unsupported SignatureVersion ${JSON.stringify(message.SignatureVersion.slice(0, 20))}`);
    const certUrl = message.SigningCertURL;
    if (!isAmazonSnsUrl(certUrl) || !new URL(certUrl).pathname.endsWith('.pem')) {
      throw new SnsSignatureError('SigningCertURL is not an https .pem URL on an Amazon SNS host');
    }
    const key = await this.publicKey(certUrl);
    const signature = Buffer.from(message.Signature, 'base64');
    let valid = false;
    try {
      valid = signature.length > 0 && crypto.verify(algorithm, Buffer.from(stringToSign(message), 'utf8'), key, signature);
    } catch {
      // An OpenSSL policy refusing SHA1, or a key the algorithm does not fit: not verified either way.
    }
    if (!valid) throw new SnsSignatureError('The message signature does not match');
  }

  private publicKey(url: string): Promise<crypto.KeyObject> {
    let key = this.keys.get(url);
    if (!key) {
      key = this.load(url);
      if (this.keys.size >= MAX_CACHED_CERTIFICATES) this.keys.delete(this.keys.keys().next().value!);
      this.keys.set(url, key);
      // A failed load is not remembered: the next message tries again.
      key.catch(() => this.keys.get(url) === key && this.keys.delete(url));
    }
    return key;
  }

  private async load(url: string): Promise<crypto.KeyObject> {
    let pem: string;
    try {
      pem = await this.fetcher(url);
    } catch (err) {
      throw new SnsCertificateUnavailable(`The signing certificate could not be fetched: ${(err as Error).message}`);
    }
    let certificate: crypto.X509Certificate;
    try {
      certificate = new crypto.X509Certificate(pem);
    } catch {
      throw new SnsSignatureError('SigningCertURL does not hold an X.509 certificate');
    }
    const now = Date.now();
    if (now < Date.parse(certificate.validFrom) || now > Date.parse(certificate.validTo)) {
      throw new SnsSignatureError('The signing certificate is not valid now');
    }
    return certificate.publicKey;
  }
}
