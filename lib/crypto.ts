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

/**
 * Secrets Mailroom must read back (DKIM private keys) are sealed with AES-256-GCM under a key
 * derived from the instance SECRET by HKDF-SHA256, one derived key per `purpose`. `context`
 * (for example the row id) is authenticated but not stored, so a sealed value copied onto
 * another row does not open there. Format: `v1.<iv>.<tag>.<ciphertext>`, base64url parts.
 */
export function sealWithSecret(secret: string, purpose: string, context: string, plaintext: string): string {
  const iv = crypto.randomBytes(12);
  const cipher = crypto.createCipheriv('aes-256-gcm', sealingKey(secret, purpose), iv);
  cipher.setAAD(Buffer.from(context));
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return ['v1', iv, cipher.getAuthTag(), ciphertext].map((part) => (typeof part === 'string' ? part : part.toString('base64url'))).join('.');
}

/** Opens what sealWithSecret sealed; throws when the SECRET, purpose or context differ, or the value was altered. */
export function openWithSecret(secret: string, purpose: string, context: string, sealed: string): string {
  const [version, iv, tag, ciphertext] = sealed.split('.');
  if (version !== 'v1' || !iv || !tag || ciphertext === undefined) throw new Error('Not a sealed value');
  const decipher = crypto.createDecipheriv('aes-256-gcm', sealingKey(secret, purpose), Buffer.from(iv, 'base64url'));
  decipher.setAAD(Buffer.from(context));
  decipher.setAuthTag(Buffer.from(tag, 'base64url'));
  return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]).toString('utf8');
}

// HKDF of the same inputs gives the same key: derived once per (secret, purpose) rather than once
// per sealed value opened (every delivery opens its domain's DKIM key).
const sealingKeys = new Map<string, Buffer>();

function sealingKey(secret: string, purpose: string): Buffer {
  const id = `${purpose}\u0000${secret}`;
  let key = sealingKeys.get(id);
  if (!key) {
    key = Buffer.from(crypto.hkdfSync('sha256', secret, 'mailroom-sealing-v1', purpose, 32));
    if (sealingKeys.size >= 64) sealingKeys.clear();
    sealingKeys.set(id, key);
  }
  return key;
}
