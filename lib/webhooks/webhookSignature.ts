import crypto from 'node:crypto';

/**
 * `X-Mailroom-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">` (contract
 * section 12), keyed with the project's webhook secret (projects.webhook_secret). The timestamp
 * is inside the signed text so a captured request cannot be replayed later than the receiver's
 * tolerance; `v1` names the scheme so a second one can be added beside it without breaking
 * receivers. The README's "Webhook signatures" section shows the same check for users to copy.
 */
export const webhookSignatureHeader = 'X-Mailroom-Signature';

/** Receivers' default tolerance between the signature's time and their clock. */
export const defaultSignatureToleranceSeconds = 300;

export function signWebhookBody(body: string | Buffer, secret: string, timestampSeconds = Math.floor(Date.now() / 1000)): string {
  return `t=${timestampSeconds},v1=${hmacHex(secret, timestampSeconds, body)}`;
}

export type SignatureVerdict = { valid: true; timestamp: number } | { valid: false; reason: string };

/**
 * Checks a received `X-Mailroom-Signature` against the raw request body (the bytes as received,
 * before any JSON parsing). Several `v1=` entries are accepted (any one matching is enough), so a
 * receiver keeps working while the sender's secret is rotated.
 */
export function verifyWebhookSignature(
  header: string | undefined,
  body: string | Buffer,
  secret: string,
  toleranceSeconds = defaultSignatureToleranceSeconds,
  nowSeconds = Math.floor(Date.now() / 1000),
): SignatureVerdict {
  if (!header) return { valid: false, reason: 'no signature header' };
  let timestamp: number | undefined;
  const signatures: string[] = [];
  for (const part of header.split(',')) {
    const [key, value] = part.trim().split('=', 2);
    if (key === 't' && /^\d{1,12}$/.test(value ?? '')) timestamp = Number(value);
    else if (key === 'v1' && /^[0-9a-f]{64}$/i.test(value ?? '')) signatures.push(value.toLowerCase());
  }
  if (timestamp === undefined) return { valid: false, reason: 'no timestamp (t=) in the signature header' };
  if (!signatures.length) return { valid: false, reason: 'no v1 signature in the signature header' };
  if (Math.abs(nowSeconds - timestamp) > toleranceSeconds) {
    return { valid: false, reason: `timestamp is ${nowSeconds - timestamp} s from now, outside the ${toleranceSeconds} s tolerance` };
  }
  const expected = Buffer.from(hmacHex(secret, timestamp, body), 'hex');
  const matches = signatures.some((candidate) => crypto.timingSafeEqual(Buffer.from(candidate, 'hex'), expected));
  return matches ? { valid: true, timestamp } : { valid: false, reason: 'signature does not match the body' };
}

function hmacHex(secret: string, timestampSeconds: number, body: string | Buffer): string {
  return crypto.createHmac('sha256', secret).update(`${timestampSeconds}.`).update(body).digest('hex');
}
