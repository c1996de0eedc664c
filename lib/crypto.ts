import crypto from 'node:crypto';

export function randomToken(bytes = 32): string {
  return crypto.randomBytes(bytes).toString('base64url');
}

export function sha256Hex(value: string): string {
  return crypto.createHash('sha256').update(value).digest('hex');
}

/** HMAC-SHA256 keyed with the instance SECRET; used to derive tokens that never need storing. */
export function hmacBase64Url(secret: string, value: string): string {
  return crypto.createHmac('sha256', secret).update(value).digest('base64url');
}

export function timingSafeEqualStrings(a: string, b: string): boolean {
  const ab = Buffer.from(a);
  const bb = Buffer.from(b);
  return ab.length === bb.length && crypto.timingSafeEqual(ab, bb);
}

export interface ApiKeyPair {
  publicKey: string;
  secretKey: string;
  secretKeyHash: string;
  secretKeyHint: string;
}

/** `pk_` / `sk_` followed by 40 URL-safe random characters (contract section 3). */
export function generateApiKeyPair(): ApiKeyPair {
  const publicKey = `pk_${randomToken(30)}`;
  const secretKey = `sk_${randomToken(30)}`;
  return { publicKey, secretKey, secretKeyHash: sha256Hex(secretKey), secretKeyHint: secretKey.slice(-4) };
}
