import crypto from 'node:crypto';

/**
 * The Standard Webhooks wire format (standardwebhooks.com, contract 18) that outbound webhook
 * messages use: a `whsec_` secret, and `webhook-signature: v1,<base64 HMAC-SHA256>` over
 * `<webhook-id>.<webhook-timestamp>.<body>`, keyed with the base64-decoded part after `whsec_`.
 * Receivers verify with the `standardwebhooks` package or the same dozen lines.
 *
 * (WEBHOOK steps of automations sign differently, with X-Mailroom-Signature: webhookSignature.ts.)
 */

const SECRET_PREFIX = 'whsec_';
/** 32 random bytes: within contract 18's 24-64 and the size the Standard Webhooks libraries generate. */
const SECRET_BYTES = 32;

export function generateStandardWebhookSecret(): string {
  return SECRET_PREFIX + crypto.randomBytes(SECRET_BYTES).toString('base64');
}

/** What the API shows of a secret after creation: its prefix and last four characters. */
export function standardWebhookSecretHint(secret: string): string {
  return `${SECRET_PREFIX}…${secret.slice(-4)}`;
}

/** `v1,<signature>` for one secret. */
export function signStandardWebhook(secret: string, messageId: string, timestampSeconds: number, body: string): string {
  if (!secret.startsWith(SECRET_PREFIX)) throw new Error('a Standard Webhooks secret starts with whsec_');
  const key = Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64');
  const mac = crypto.createHmac('sha256', key).update(`${messageId}.${timestampSeconds}.${body}`).digest('base64');
  return `v1,${mac}`;
}

/** The three headers of one attempt; several secrets (during a rotation) give space-separated signatures. */
export function standardWebhookHeaders(secrets: readonly string[], messageId: string, timestampSeconds: number, body: string): Record<string, string> {
  return {
    'webhook-id': messageId,
    'webhook-timestamp': String(timestampSeconds),
    'webhook-signature': secrets.map((secret) => signStandardWebhook(secret, messageId, timestampSeconds, body)).join(' '),
  };
}
