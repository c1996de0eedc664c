import type { Snippet } from './snippets';

/**
 * How a receiver checks a message, as docs/guides/webhooks.md shows it (its test runs both there):
 * the secret read from the environment, never written out.
 */
export const VERIFY_SNIPPETS: Snippet[] = [
  {
    label: 'standardwebhooks',
    what: 'standardwebhooks example',
    code: `// npm install standardwebhooks
const { Webhook } = require('standardwebhooks');

// rawBody: the request's body as received (Express: express.raw({ type: 'application/json' }))
function receive(rawBody, headers) {
  const webhook = new Webhook(process.env.MAILROOM_WEBHOOK_SECRET);
  return webhook.verify(rawBody, headers); // the parsed body, or a thrown WebhookVerificationError
}`,
  },
  {
    label: 'Node.js, no dependency',
    what: 'Node.js example',
    code: `const crypto = require('node:crypto');

function verifyWebhook(headers, rawBody, secret, toleranceSeconds = 300) {
  const id = headers['webhook-id'];
  const timestamp = Number(headers['webhook-timestamp']);
  if (!id || !Number.isInteger(timestamp) || Math.abs(Date.now() / 1000 - timestamp) > toleranceSeconds) return false;
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const expected = crypto.createHmac('sha256', key).update(\`\${id}.\${timestamp}.\`).update(rawBody).digest();
  return String(headers['webhook-signature'] ?? '')
    .split(' ')
    .some((signature) => {
      const [version, value = ''] = signature.split(',');
      const given = Buffer.from(value, 'base64');
      return version === 'v1' && given.length === expected.length && crypto.timingSafeEqual(given, expected);
    });
}`,
  },
];
