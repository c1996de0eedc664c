/**
 * Rendering one email per recipient, in process, one core: the previous renderer (three tokenizer
 * passes per recipient, the footer and tracking spliced separately, one extra signature per link;
 * kept as test/mail/referenceRenderer.ts) against the prepared one (mail/rendering/preparedTemplate.ts),
 * by stage. No database, no network: only CPU, so run it when the machine is otherwise idle.
 *
 *   node --import tsx bench/render.ts [recipients=2000] [rounds=3]
 *
 * Bodies: (a) a 3.8 KB newsletter with 50 links personalised in its text, (b) the campaign
 * bench's body, (c) an MJML newsletter, (d) body (a) with no personal data. All MARKETING (the
 * footer applies) with open and click tracking on. Prints CPU µs per recipient; each figure is
 * the best of `rounds` runs over all recipients.
 */
import crypto from 'node:crypto';
import { renderEmail, preparedTemplate, renderPrepared } from '../mail/rendering/renderEmail';
import { compileTemplate } from '../mail/rendering/templateCompiler';
import { findLandmarks } from '../mail/rendering/htmlLandmarks';
import { htmlToText } from '../mail/rendering/htmlToText';
import { applySplices, clickSplices, openPixel, type Splice } from '../mail/rendering/linkTracking';
import { textSkeletonOf } from '../mail/rendering/textSkeleton';
import { unsubscribeFooter } from '../mail/rendering/unsubscribeFooter';
import { emailLinks, type EmailLinks } from '../mail/links/signedLinks';
import { templateVariables } from '../services/sending/templateVariables';
import { composeEmail, type EmailToCompose } from '../services/sending/emailComposer';
import { referenceEmailLinks, referenceRenderEmail, referenceStages } from '../test/mail/referenceRenderer';

const PUBLIC_URL = 'https://mail.example.com';
const SECRET = 'bench-secret-bench-secret-bench-secret-0123';
const tracking = { opens: true, clicks: true };
const recipientCount = Number(process.argv[2] ?? 2_000);
const rounds = Number(process.argv[3] ?? 3);

function newsletter(personal: boolean): string {
  const items = Array.from(
    { length: 50 },
    (_, i) => `<p>${personal ? '{{firstName}}, s' : 'S'}tory ${i + 1}: <a href="https://example.com/n/${i + 1}">read</a></p>`,
  ).join('\n');
  return `<html><head><title>News</title></head><body><h1>Hello ${personal ? '{{firstName}}' : 'reader'}</h1>\n${items}\n</body></html>`;
}

const bodies: Array<{ name: string; body: string }> = [
  { name: '(a) 3.8 KB, 50 links, personal text', body: newsletter(true) },
  {
    name: '(b) campaign bench body',
    body: '<html><body><h1>Hello {{firstName}}</h1><p>Your plan: {{plan}}. <a href="https://example.com/news">Read the news</a> or <a href="https://example.com/offers">see offers</a>.</p></body></html>',
  },
  {
    name: '(c) MJML newsletter',
    body: `<mjml><mj-body>
  <mj-section><mj-column><mj-image src="https://example.com/logo.png" alt="Acme" /><mj-text font-size="20px">Hello {{firstName}}</mj-text></mj-column></mj-section>
  ${Array.from({ length: 6 }, (_, i) => `<mj-section><mj-column><mj-text>Story ${i + 1}: something happened this week, and here is a paragraph about it for {{plan}} readers.</mj-text><mj-button href="https://example.com/story/${i + 1}">Read more</mj-button></mj-column></mj-section>`).join('\n  ')}
  <mj-section><mj-column><mj-text>Change your <a href="{{manageUrl}}">preferences</a>.</mj-text></mj-column></mj-section>
</mj-body></mjml>`,
  },
  { name: '(d) body (a) without personal data', body: newsletter(false) },
];

const recipients = Array.from({ length: recipientCount }, (_, i) => ({
  emailId: crypto.randomUUID(),
  contact: { id: crypto.randomUUID(), email: `reader${i}@bench.example`, data: { firstName: `Reader ${i}`, plan: i % 3 ? 'free' : 'pro' } },
}));

/**
 * Best of `rounds`, µs of this process's CPU time (user + system) per recipient: on a shared
 * machine, time spent waiting for a core is not counted (GC threads are).
 */
function time(run: (i: number) => unknown): number {
  for (let i = 0; i < Math.min(200, recipientCount); i++) run(i);
  let best = Infinity;
  for (let r = 0; r < rounds; r++) {
    const started = process.cpuUsage();
    for (let i = 0; i < recipientCount; i++) run(i);
    const used = process.cpuUsage(started);
    best = Math.min(best, (used.user + used.system) / recipientCount);
  }
  return best;
}

const config = { publicUrl: PUBLIC_URL, secret: SECRET, trackOpens: true, trackClicks: true };

function composeInput(content: { subject: string; body: string; type: 'MARKETING' }, i: number): EmailToCompose {
  const r = recipients[i];
  return {
    id: r.emailId,
    projectId: '00000000-0000-4000-8000-000000000000',
    source: 'CAMPAIGN',
    content,
    sender: { fromAddress: 'news@bench.example', fromName: null, replyTo: null, domain: 'bench.example' },
    recipient: { toAddress: r.contact.email, toName: null, contactId: r.contact.id, suppressed: false, subscribed: true },
    personalisation: { contact: r.contact, requestData: {}, linkContactId: r.contact.id },
    owners: { templateId: null, campaignId: '00000000-0000-4000-8000-000000000001' },
  };
}

const rows: string[][] = [];
for (const { name, body } of bodies) {
  const content = { subject: 'News for {{firstName}}', body, type: 'MARKETING' as const };
  const oldLinks = recipients.map((r) => referenceEmailLinks(PUBLIC_URL, SECRET, { emailId: r.emailId, contactId: r.contact.id }));
  const newLinks = recipients.map((r) => emailLinks(PUBLIC_URL, SECRET, { emailId: r.emailId, contactId: r.contact.id }));
  const oldVariables = recipients.map((r, i) => templateVariables(r.contact, {}, oldLinks[i]));
  const newVariables = recipients.map((r, i) => templateVariables(r.contact, {}, newLinks[i]));

  // Whole renders (links and variables built beforehand).
  const oldRender = time((i) => referenceRenderEmail({ ...content, variables: oldVariables[i], links: oldLinks[i], tracking }));
  const newRender = time((i) => renderEmail({ ...content, variables: newVariables[i], links: newLinks[i], tracking }));
  const template = preparedTemplate(content, tracking);
  const newPrepared = time((i) => renderPrepared(template, newVariables[i], newLinks[i]));

  // Stages, each over what the stage before it produced.
  const subjectFn = compileTemplate('subject', content.subject).render!;
  const bodyFn = compileTemplate('body', body).render!;
  const handlebars = time((i) => subjectFn(newVariables[i]) + bodyFn(newVariables[i]));
  const renderedHtml = recipients.map((_, i) => bodyFn(newVariables[i]));
  const oldLandmarks = time((i) => {
    referenceStages.findLandmarks(renderedHtml[i]);
    return referenceStages.insertAtBodyEnd(renderedHtml[i], unsubscribeFooter(oldLinks[i].unsubscribeUrl));
  });
  const landmarks = renderedHtml.map((html) => findLandmarks(html));
  const footers = recipients.map((_, i): Splice => {
    const at = landmarks[i].bodyClose ?? renderedHtml[i].length;
    return { at, end: at, text: unsubscribeFooter(newLinks[i].unsubscribeUrl) };
  });
  const newLandmarks = time((i) => {
    const found = findLandmarks(renderedHtml[i]);
    const at = found.bodyClose ?? renderedHtml[i].length;
    return applySplices(renderedHtml[i], [{ at, end: at, text: unsubscribeFooter(newLinks[i].unsubscribeUrl) }]);
  });
  const withFooter = recipients.map((_, i) => applySplices(renderedHtml[i], [footers[i]]));
  const oldText = time((i) => htmlToText(withFooter[i]));
  // The text part from the template's skeleton (made once, on the first recipient), filled in with each recipient's values.
  const skeleton = textSkeletonOf(compileTemplate('body', body).handlebarsSource!);
  const newText = time((i) => skeleton?.textFor(newVariables[i], newLinks[i].unsubscribeUrl) ?? htmlToText(withFooter[i]));
  const oldTracking = time((i) => referenceStages.addTracking(withFooter[i], oldLinks[i], tracking));
  const targets = new Map();
  const newTracking = time((i) => {
    const splices = [footers[i], ...clickSplices(landmarks[i].hrefs, newLinks[i], targets)];
    const at = landmarks[i].bodyClose ?? renderedHtml[i].length;
    splices.push({ at, end: at, text: openPixel(newLinks[i]) });
    return applySplices(renderedHtml[i], splices);
  });
  const oldLinksTime = time((i) => referenceEmailLinks(PUBLIC_URL, SECRET, { emailId: recipients[i].emailId, contactId: recipients[i].contact.id }));
  const newLinksTime = time((i) => emailLinks(PUBLIC_URL, SECRET, { emailId: recipients[i].emailId, contactId: recipients[i].contact.id }));
  // composeEmail before: links, variables, the previous renderer; the row is the same object either way.
  const oldCompose = time((i) => {
    const links: EmailLinks = referenceEmailLinks(PUBLIC_URL, SECRET, { emailId: recipients[i].emailId, contactId: recipients[i].contact.id });
    return referenceRenderEmail({ ...content, variables: templateVariables(recipients[i].contact, {}, links), links, tracking });
  });
  const newCompose = time((i) => composeEmail(config, composeInput(content, i)));

  const f = (n: number) => n.toFixed(1);
  const line = (stage: string, before: number, after: number) => rows.push([name, stage, f(before), f(after), `${(before / after).toFixed(2)}×`]);
  line('Handlebars (subject + body)', handlebars, handlebars);
  line('landmarks + footer', oldLandmarks, newLandmarks);
  line('text part', oldText, newText);
  line('tracking + signing', oldTracking, newTracking);
  line('signed links', oldLinksTime, newLinksTime);
  line('renderEmail', oldRender, newRender);
  line('renderPrepared (template in hand)', oldRender, newPrepared);
  line('composeEmail (links, variables, render, row)', oldCompose, newCompose);
  console.error(`${name}: body ${body.length} chars, html ${withFooter[0].length} chars`);
}

const header = ['body', 'stage', 'before µs', 'after µs', 'speed-up'];
const widths = header.map((h, c) => Math.max(h.length, ...rows.map((r) => r[c].length)));
for (const r of [header, ...rows]) console.log(r.map((v, c) => (c >= 2 ? v.padStart(widths[c]) : v.padEnd(widths[c]))).join('  '));
