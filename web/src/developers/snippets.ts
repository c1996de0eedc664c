import type { InstanceConfig } from '../api/queries';

/**
 * The Developers page's examples, written to work as shown (test/dashboard/developers.test.ts runs
 * the curl ones): the API's address is the page's own origin (the dashboard is served by the API),
 * the public key is written out (it may be public), the secret key is read from the environment.
 */

export interface Snippet {
  /** The tab's name ("curl", "Node.js", "Browser"). */
  label: string;
  /** What the copy button says it copies ("curl example"). */
  what: string;
  code: string;
}

/** The address this dashboard was opened at is the API's (same origin), whatever PUBLIC_URL says. */
export function apiBaseUrl(): string {
  return window.location.origin;
}

/** A sender address that works here: the outbox's domain while mail stays in the local outbox. */
function senderAddress(config: InstanceConfig | undefined): string {
  return config?.localOutbox.senderDomain ? `hello@${config.localOutbox.senderDomain}` : 'hello@your-verified-domain.com';
}

/** A JSON body in single quotes for a shell (the examples hold no single quote). */
function shellJson(value: unknown): string {
  return `'${JSON.stringify(value, null, 2).replace(/'/g, `'\\''`)}'`;
}

const EXAMPLE_EVENT = { email: 'ada@example.com', event: 'signed-up', data: { plan: 'free' } };

export function sendSnippets(config: InstanceConfig | undefined): Snippet[] {
  const base = apiBaseUrl();
  const message = { from: senderAddress(config), to: 'you@example.com', subject: 'Hello from Mailroom', body: '<p>It works.</p>' };
  return [
    {
      label: 'curl',
      what: 'curl example',
      code: [
        `curl ${base}/v1/send \\`,
        `  -H "Authorization: Bearer $MAILROOM_SECRET_KEY" \\`,
        `  -H "Content-Type: application/json" \\`,
        `  -d ${shellJson(message)}`,
      ].join('\n'),
    },
    {
      label: 'Node.js',
      what: 'Node.js example',
      code: [
        `// npm install @plunk/node: Mailroom speaks Plunk's /v1/ API`,
        `import Plunk from '@plunk/node';`,
        ``,
        `const mailroom = new Plunk(process.env.MAILROOM_SECRET_KEY, { baseUrl: '${base}/v1/' });`,
        ``,
        `await mailroom.emails.send({`,
        `  from: '${message.from}',`,
        `  to: '${message.to}',`,
        `  subject: '${message.subject}',`,
        `  body: '${message.body}',`,
        `});`,
      ].join('\n'),
    },
  ];
}

export function trackSnippets(publicKey: string): Snippet[] {
  const base = apiBaseUrl();
  return [
    {
      label: 'curl',
      what: 'curl example',
      code: [
        `curl ${base}/v1/track \\`,
        `  -H "Authorization: Bearer ${publicKey}" \\`,
        `  -H "Content-Type: application/json" \\`,
        `  -d ${shellJson(EXAMPLE_EVENT)}`,
      ].join('\n'),
    },
    {
      label: 'Browser',
      what: 'browser example',
      code: [
        `await fetch('${base}/v1/track', {`,
        `  method: 'POST',`,
        `  headers: { Authorization: 'Bearer ${publicKey}', 'Content-Type': 'application/json' },`,
        `  body: JSON.stringify({ email: 'ada@example.com', event: 'signed-up', data: { plan: 'free' } }),`,
        `});`,
      ].join('\n'),
    },
    {
      label: 'Node.js',
      what: 'Node.js example',
      code: [
        `import Plunk from '@plunk/node';`,
        ``,
        `const mailroom = new Plunk('${publicKey}', { baseUrl: '${base}/v1/' });`,
        ``,
        `await mailroom.events.track({ email: 'ada@example.com', event: 'signed-up', data: { plan: 'free' } });`,
      ].join('\n'),
    },
  ];
}
