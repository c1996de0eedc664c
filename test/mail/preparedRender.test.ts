import crypto from 'node:crypto';
import { preparedTemplate, renderEmail, TemplateRenderError, type RenderedEmail, type RenderInput, type TemplateType } from '../../mail/rendering/renderEmail';
import { emailLinks, type EmailLinks } from '../../mail/links/signedLinks';
import { templateVariables } from '../../services/sending/templateVariables';
import { composeEmail, type EmailToCompose } from '../../services/sending/emailComposer';
import { MAX_HTML_DEPTH } from '../../mail/rendering/htmlLandmarks';
import { MAX_PLACEHOLDERS } from '../../mail/rendering/templateCompiler';
import { referenceEmailLinks, referenceRenderEmail } from './referenceRenderer';

/**
 * The prepared renderer (template work once, recipient work per email) against the renderer as
 * it was (referenceRenderer.ts): for every case, several recipients in a row (so what the
 * prepared template keeps between recipients is used, including the text part reused across
 * recipients whose HTML differs only by their token), subject, HTML, text and headers must be the
 * same strings, and a template that fails must fail with the same problems. There is no intended
 * difference.
 */
const PUBLIC_URL = 'https://mail.example.test';
const SECRET = 'prepared-render-secret-prepared-render-secret';

interface Recipient {
  emailId: string;
  contactId: string;
  email: string;
  data: Record<string, unknown>;
}

/** Two recipients share their data (their HTML differs only by their links), one differs, the first comes back. */
function recipients(data: Record<string, unknown>, otherData: Record<string, unknown>): Recipient[] {
  const make = (d: Record<string, unknown>, email: string): Recipient => ({ emailId: crypto.randomUUID(), contactId: crypto.randomUUID(), email, data: d });
  const first = make(data, 'ann@example.com');
  return [first, make(data, 'ann@example.com'), make(otherData, 'bob@example.com'), { ...first, emailId: crypto.randomUUID() }, make(data, 'ann@example.com')];
}

type Outcome = { ok: RenderedEmail } | { problems: unknown } | { thrown: string };

function outcome(run: () => RenderedEmail): Outcome {
  try {
    return { ok: run() };
  } catch (error) {
    if (error instanceof TemplateRenderError) return { problems: error.problems };
    return { thrown: `${(error as Error).name}: ${(error as Error).message}` };
  }
}

interface Case {
  name: string;
  subject?: string;
  body: string;
  type?: TemplateType;
  links?: boolean;
  tracking?: RenderInput['tracking'];
  data?: Record<string, unknown>;
  otherData?: Record<string, unknown>;
  /** Request data built from the recipient's own links (a tracked click URL in a variable, say). */
  linkData?: (links: EmailLinks) => Record<string, unknown>;
}

/** Renders `c` for each recipient both ways and returns how many recipients rendered (for the caller to expect some). */
function expectSameBothWays(c: Case): number {
  let rendered = 0;
  for (const r of recipients(c.data ?? { name: 'Ann' }, c.otherData ?? { name: 'Bob', plan: { name: 'Team' } })) {
    const ids = { emailId: r.emailId, contactId: r.contactId };
    const newLinks = c.links === false ? undefined : emailLinks(PUBLIC_URL, SECRET, ids);
    const oldLinks = c.links === false ? undefined : referenceEmailLinks(PUBLIC_URL, SECRET, ids);
    const contact = { id: r.contactId, email: r.email, data: r.data };
    const input = (links: EmailLinks | undefined): RenderInput => ({
      subject: c.subject ?? 'Hello {{name}}',
      body: c.body,
      type: c.type ?? 'TRANSACTIONAL',
      variables: templateVariables(contact, links && c.linkData ? c.linkData(links) : {}, links),
      links,
      tracking: c.tracking,
    });
    const expected = outcome(() => referenceRenderEmail(input(oldLinks)));
    const actual = outcome(() => renderEmail(input(newLinks)));
    expect({ case: c.name, ...actual }).toEqual({ case: c.name, ...expected });
    if ('ok' in actual) rendered++;
  }
  return rendered;
}

/** The cases of renderer.test.ts, as they are written there. */
const rendererFixtures: Case[] = [
  { name: 'escaping', body: '<p>{{snippet}}|{{{snippet}}}|{{nothing}}|{{nothing.deeper}}</p>', data: { snippet: '<b>"Tom" & Jerry</b>' } },
  {
    name: 'reserved names',
    subject: 's',
    body: '{{name}} {{data.name}} {{plan.name}} {{data.plan.name}} {{coupon}} {{email}} {{mailroom_email}} {{id}} {{mailroom_id}} {{manageUrl}}',
    data: { name: 'Ann', plan: { name: 'Pro', seats: 3 }, coupon: 'SAVE10' },
  },
  {
    name: 'nested paths and loops',
    body: '{{data.plan.name}}/{{plan.seats}}/{{items.[1].sku}}/{{#each items}}{{sku}}{{#unless @last}},{{/unless}}{{/each}}',
    data: { plan: { name: 'Pro', seats: 3 }, items: [{ sku: 'A1' }, { sku: 'B2' }] },
  },
  { name: 'prototype', body: '[{{constructor}}][{{name.constructor.name}}][{{__proto__}}]' },
  {
    name: 'fallbacks',
    body: '{{first ?? "friend"}}|{{first ?? \'pal\'}}|{{default first "mate"}}|{{name ?? "friend"}}|{{ empty ?? "was empty" }}',
    data: { empty: '' },
  },
  { name: 'fallback forms', body: '{{{html ?? "<i>none</i>"}}}|{{html ?? "<i>none</i>"}}|{{a ?? b ?? "c"}}|  {{~first ?? "x"~}}  |' },
  { name: 'raw fallback', body: '{{{html ?? "x"}}}', data: { html: '<b>bold</b>' } },
  { name: '?? left alone', body: 'Really?? {{default first "who ?? knows"}} {{! first ?? "x" }} \\{{first ?? "y"}}' },
  { name: 'helper with fallback', subject: 's', body: '{{upper name ?? "y"}}' },
  { name: 'problems in both fields', subject: 'Hi {{shout name}}', body: '<p>{{#if name}}unclosed</p>' },
  { name: 'mismatched blocks', subject: 'ok', body: '{{#if a}}x{{/each}}' },
  { name: 'missing partial', subject: 'ok', body: '{{> footer}}' },
  { name: 'good blocks', subject: 'Hi {{name ?? "there"}}', body: '<p>{{#each items}}{{this}}{{else}}none{{/each}}</p>' },
  { name: 'too many placeholders', subject: 's', body: '{{a}}'.repeat(MAX_PLACEHOLDERS + 1) },
  {
    name: 'loop budget',
    body: '{{#each list}}{{#each ../list}}{{#each ../../list}}x{{/each}}{{/each}}{{/each}}',
    data: { list: Array.from({ length: 100 }, (_, i) => i) },
  },
  {
    name: 'MJML',
    body: `<!-- newsletter -->
<mjml>
  <mj-body>
    <mj-section background-color="{{brandColor}}">
      <mj-column>
        <mj-text>Hello {{name ?? "there"}}, you are on {{data.plan.name}}</mj-text>
        <mj-button href="https://example.com/account">Your account</mj-button>
      </mj-column>
    </mj-section>
  </mj-body>
</mjml>`,
    data: { brandColor: '#ff0066', plan: { name: 'Pro' } },
  },
  { name: 'MJML error', subject: 's', body: '<mjml><mj-body><mj-section><mj-column><mj-unknown>x</mj-unknown></mj-column></mj-section></mj-body></mjml>' },
  { name: 'mj-include', body: '<mjml><mj-body><mj-include path="/etc/passwd" /></mj-body></mjml>' },
  {
    name: 'subject one line',
    subject: '{{greeting}}, {{name}} & co <{{company ?? "Acme"}}>',
    body: '<p>x</p>',
    data: { greeting: 'Hi\r\nBcc: victim@example.com\n', name: 'Ann' },
  },
  {
    name: 'text part',
    body: `<html><head><title>T</title><style>p{color:red}</style></head><body>
      <h1>Welcome</h1><p>Read <a href="https://example.com/docs?a=1&amp;b=2">the docs</a> or <a href="https://example.com">https://example.com</a>.</p>
      <img src="https://example.com/logo.png" alt="Acme logo"></body></html>`,
    tracking: { opens: true, clicks: true },
  },
  { name: 'footer in body', body: '<html><body><p>News</p></body></html>', type: 'MARKETING' },
  { name: 'footer without body', body: '<p>News</p>', type: 'MARKETING' },
  { name: 'own unsubscribe link', body: '<p>News. <a href="{{unsubscribeUrl}}">Stop these</a></p>', type: 'MARKETING' },
  { name: 'receipt', body: '<p>Your receipt</p>', type: 'HEADLESS' },
  { name: 'transactional unsubscribe', body: '<p><a href="{{unsubscribeUrl}}">Unsubscribe from reminders</a></p>' },
  { name: 'no links', body: '<p>[{{unsubscribeUrl}}]</p>', type: 'MARKETING', links: false },
  {
    name: 'tracking',
    type: 'MARKETING',
    tracking: { opens: false, clicks: true },
    body: `<html><body>
<a href="https://example.com/a?x=1&amp;y=2">A</a>
<a class="b" href = 'http://example.com/b/{{id}}' >B</a>
<A HREF=https://example.com/c>C</A>
<a href="  https://example.com/spaced  ">S</a>
<a href="mailto:help@example.com">mail</a>
<a href="tel:+15551234">call</a>
<a href="#top">top</a>
<a href="/relative">rel</a>
<a href="{{manageUrl}}">prefs</a>
<a href="{{unsubscribeUrl}}">unsub</a>
<a href="{{subscribeUrl}}">resub</a>
<!--[if mso]><a href="https://example.com/outlook">o</a><![endif]-->
</body></html>`,
  },
  { name: 'pixel', body: '<html><body><p>x</p></body></html>', tracking: { opens: true, clicks: false } },
  { name: 'pixel after footer', body: '<p><a href="https://example.com">x</a></p>', type: 'MARKETING', tracking: { opens: true, clicks: true } },
  { name: 'tracking off', body: '<p><a href="https://example.com">x</a></p>', tracking: { opens: false, clicks: false } },
  {
    name: 'unicode',
    subject: 'Grüße, {{name}} ✉',
    body: '<html><body><p>Hallo {{name}} aus {{city}}</p><a href="https://例え.jp/パス?q=ü">ü</a></body></html>',
    type: 'MARKETING',
    tracking: { opens: true, clicks: true },
    data: { name: 'Zoë 山田 🎉', city: 'القاهرة' },
  },
  { name: 'too deep', subject: 's', body: `${'<div>'.repeat(MAX_HTML_DEPTH + 1)}x${'</div>'.repeat(MAX_HTML_DEPTH + 1)}` },
  { name: 'too deep through a variable', body: '<p>{{{snippet}}}</p>', data: { snippet: '<b>'.repeat(MAX_HTML_DEPTH + 1) } },
  {
    name: 'just deep enough',
    body: `${'<div>'.repeat(MAX_HTML_DEPTH - 1)}<a href="https://example.com">{{name}}</a>${'</div>'.repeat(MAX_HTML_DEPTH - 1)}<br><img src="x">`,
    type: 'MARKETING',
    tracking: { opens: true, clicks: true },
  },
  { name: 'deep variables', subject: '{{deep.n.n.n}}', body: '{{deep.n.n.leaf}}|{{data.deep}}', data: { deep: { n: { n: { leaf: 'bottom' } } } } },
  { name: 'blocks too deep', subject: 's', body: `${'{{#if name}}'.repeat(2_400)}x${'{{/if}}'.repeat(2_400)}` },
  { name: 'body too large', subject: 's', body: 'x'.repeat(2_000_001) },
];

const many = Array.from(
  { length: 60 },
  (_, i) => `<p>Item ${i} for {{name}}: <a href="https://example.com/articles/${i}?ref=nl&amp;n=${i}">Article ${i}</a></p>`,
).join('\n');

/** Bodies that reach the corners of the prepared path: each is rendered with every type, tracking and links setting. */
const generatedBodies: Array<{ name: string; body: string; data?: Record<string, unknown>; linkData?: Case['linkData'] }> = [
  { name: 'static newsletter', body: `<html><body><h1>News</h1>${many.replaceAll('{{name}}', 'you')}</body></html>` },
  { name: 'personalised newsletter', body: `<html><head><title>x</title></head><body><h1>News for {{name}}</h1>${many}</body></html>` },
  {
    name: 'MJML newsletter',
    body: `<mjml><mj-body><mj-section><mj-column><mj-text>Hi {{name}}</mj-text><mj-button href="https://example.com/a?b=1&c=2">Go</mj-button>
      <mj-text><a href="{{unsubscribeUrl}}">Unsubscribe</a> or <a href="{{manageUrl}}">manage</a></mj-text></mj-column></mj-section></mj-body></mjml>`,
  },
  { name: 'MJML without own link', body: '<mjml><mj-body><mj-section><mj-column><mj-text>Hello there</mj-text></mj-column></mj-section></mj-body></mjml>' },
  { name: 'own unsubscribe link, static', body: '<html><body><p>Bye: <a href="{{unsubscribeUrl}}">stop</a> {{subscribeUrl}}</p></body></html>' },
  { name: 'unsubscribe URL in a heading', body: '<html><body><h1>{{unsubscribeUrl}}</h1><h2><a href="{{manageUrl}}">{{manageUrl}}</a></h2></body></html>' },
  {
    name: 'unsubscribe URL as link text',
    body: '<p><a href="{{unsubscribeUrl}}">{{unsubscribeUrl}}</a> and <a href="{{manageUrl}}?tab=1">{{manageUrl}}</a></p>',
  },
  {
    name: 'triple-stash markup',
    body: '<html><body><div>{{{snippet}}}</div><a href="https://example.com/after">after</a></body></html>',
    data: { snippet: '<a href="https://example.com/raw">raw</a></body><p>late</p>' },
  },
  { name: 'triple-stash unterminated', body: '<html><body><p>x</p>{{{snippet}}}</body></html>', data: { snippet: '<a href="https://example.com/open' } },
  {
    name: 'blocks',
    body: '{{#if vip}}<a href="https://example.com/vip">VIP</a>{{else}}<a href="https://example.com/std">std</a>{{/if}}{{#each items}}<a href="https://example.com/i/{{this}}">{{this}}</a>{{/each}}</body>',
    data: { vip: true, items: ['a', 'b'] },
  },
  {
    name: 'links in comments and scripts',
    body: '<html><body><!-- <a href="https://example.com/c">c</a> --><script>var s = "</body><a href=\'https://x.example\'>";</script><a href="https://example.com/real">r</a></body></html>',
  },
  {
    name: 'entities in hrefs',
    body: '<a href="https://example.com/?a=1&amp;b=&quot;2&quot;&lt;&#x41;&eacute;">e</a><a href=https://example.com/?q=a&amp;r=b>u</a><area href="https://example.com/area">',
  },
  {
    name: 'unicode',
    body: '<p>Grüße {{name}} 🎉 <a href="https://例え.jp/パス?q=ü">ü</a> <a href="https://example.com/%E2%9C%93">✓</a></p>',
    data: { name: 'Zoë' },
  },
  { name: 'no body, ends inside a tag', body: '<p>News</p><a href="https://example.com/x" title="unterminated' },
  { name: 'no body, ends inside a comment', body: '<p>News <a href="https://example.com/y">y</a></p><!-- open comment' },
  { name: 'several body closes', body: '<html><body><p>a</p></body><a href="https://example.com/after">after</a></BODY ></html>' },
  { name: 'body close in a title', body: '<html><head><title></body></title></head><body><p>x</p></body></html>' },
  {
    name: 'repeated and empty hrefs',
    body: '<a href="https://example.com/1" href="https://example.com/2">d</a><a href>n</a><a href="">e</a><a href=" HTTP://EXAMPLE.COM/UP ">up</a>',
  },
  {
    name: 'already tracked click',
    body: '<p><a href="{{tracked}}">t</a> <a href="{{manageUrl}}#top">m</a></p>',
    linkData: (l) => ({ tracked: l.clickUrl('https://example.com/pre') }),
  },
  { name: 'empty', body: '' },
];

describe('the prepared renderer renders what the renderer rendered, byte for byte', () => {
  it.each(rendererFixtures.map((c) => [c.name, c] as const))('renderer fixture: %s', (_name, c) => {
    expectSameBothWays(c);
  });

  const settings: Array<{ type: TemplateType; links: boolean; tracking?: RenderInput['tracking'] }> = [];
  for (const type of ['MARKETING', 'TRANSACTIONAL', 'HEADLESS'] as const) {
    settings.push({ type, links: false, tracking: { opens: true, clicks: true } });
    for (const tracking of [
      undefined,
      { opens: false, clicks: false },
      { opens: true, clicks: false },
      { opens: false, clicks: true },
      { opens: true, clicks: true },
    ]) {
      settings.push({ type, links: true, tracking });
    }
  }

  it.each(generatedBodies.map((b) => [b.name, b] as const))('generated: %s, every type, tracking and links setting', (_name, b) => {
    let rendered = 0;
    for (const s of settings) rendered += expectSameBothWays({ ...b, ...s, name: `${b.name} ${s.type} links=${s.links} ${JSON.stringify(s.tracking)}` });
    expect(rendered).toBeGreaterThan(0);
  });

  it('a 1 MB template', () => {
    const paragraph = '<p>Hello {{name}}, read <a href="https://example.com/{{id}}">this</a> and more text to fill the line nicely.</p>\n';
    const body = `<html><body>${'<p>static filler text</p>'.repeat(37_000)}${paragraph.repeat(1_000)}</body></html>`;
    expect(expectSameBothWays({ name: '1 MB', body, type: 'MARKETING', tracking: { opens: true, clicks: true } })).toBe(5);
  });

  it('recipients whose tokens differ in length (word wrap differs) get their own text part', () => {
    // "Hi x [<manage URL>]" fits in 78 columns with a short token and wraps with a long one.
    const body = '<html><body><p>Hi <a href="{{manageUrl}}">x</a></p></body></html>';
    for (const contactId of ['c', 'a-contact-id-of-another-length-entirely', 'c', 'dd']) {
      const ids = { emailId: crypto.randomUUID(), contactId };
      const input = (links: EmailLinks): RenderInput => ({
        subject: 's',
        body,
        type: 'MARKETING',
        variables: templateVariables({ id: contactId, email: 'a@example.com', data: {} }, {}, links),
        links,
      });
      expect(renderEmail(input(emailLinks(PUBLIC_URL, SECRET, ids)))).toEqual(referenceRenderEmail(input(referenceEmailLinks(PUBLIC_URL, SECRET, ids))));
    }
  });

  it('prepares a template once per content and settings', () => {
    const content = { subject: 'Hi {{name}}', body: `<p>${crypto.randomUUID()}</p>`, type: 'MARKETING' as const };
    const first = preparedTemplate(content, { opens: true, clicks: true });
    expect(preparedTemplate({ ...content, body: `${content.body}` }, { opens: true, clicks: true })).toBe(first);
    expect(preparedTemplate(content, { opens: true, clicks: false })).not.toBe(first);
    expect(preparedTemplate({ ...content, subject: 'Hi' }, { opens: true, clicks: true })).not.toBe(first);
    expect(preparedTemplate({ ...content, type: 'TRANSACTIONAL' }, { opens: true, clicks: true })).not.toBe(first);
  });

  it('composeEmail renders what the renderer rendered', () => {
    const config = { publicUrl: PUBLIC_URL, secret: SECRET, trackOpens: true, trackClicks: true };
    const content = { subject: 'News for {{name}}', body: `<html><body><h1>Hi {{name}}</h1>${many}</body></html>`, type: 'MARKETING' as const };
    for (const r of recipients({ name: 'Ann' }, { name: 'Bob' })) {
      const contact = { id: r.contactId, email: r.email, data: r.data };
      const input: EmailToCompose = {
        id: r.emailId,
        projectId: crypto.randomUUID(),
        source: 'CAMPAIGN',
        content,
        sender: { fromAddress: 'news@example.com', fromName: null, replyTo: null, domain: 'example.com' },
        recipient: { toAddress: r.email, toName: null, contactId: r.contactId, suppressed: false, subscribed: true },
        personalisation: { contact, requestData: {}, linkContactId: r.contactId },
        owners: { templateId: null },
      };
      const links = referenceEmailLinks(PUBLIC_URL, SECRET, { emailId: r.emailId, contactId: r.contactId });
      const expected = referenceRenderEmail({ ...content, variables: templateVariables(contact, {}, links), links, tracking: { opens: true, clicks: true } });
      const { email, rendered } = composeEmail(config, input);
      expect(rendered).toEqual(expected);
      expect({ subject: email.subject, html: email.html, text: email.text, headers: email.headers }).toEqual(expected);
    }
  });
});
