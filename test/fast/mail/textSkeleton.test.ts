import fs from 'node:fs';
import path from 'node:path';
import { emailLinks } from '../../../mail/links/signedLinks';
import { htmlToText } from '../../../mail/rendering/htmlToText';
import { findLandmarks } from '../../../mail/rendering/htmlLandmarks';
import { preparedTemplate, renderPrepared } from '../../../mail/rendering/renderEmail';
import { compileTemplate } from '../../../mail/rendering/templateCompiler';
import { textSkeletonOf } from '../../../mail/rendering/textSkeleton';
import { unsubscribeFooter } from '../../../mail/rendering/unsubscribeFooter';
import { templateVariables } from '../../../services/sending/templateVariables';

/**
 * The text part from the template's skeleton (mail/rendering/textSkeleton.ts) must be exactly
 * htmlToText(the rendered HTML, footer included) whenever the skeleton gives one: over every
 * template below (the bench's, edge cases, and every HTML template literal of the test suite) and
 * every value below, for the same recipient. Where the skeleton cannot be exact it must give null
 * (the renderer then converts the rendered HTML): the templates marked `fallback` never use it.
 */
const PUBLIC_URL = 'https://mail.example.test';
const SECRET = 'text-skeleton-secret-text-skeleton-secret';
const links = emailLinks(PUBLIC_URL, SECRET, { emailId: '5b4c3f1e-1111-4a2b-9c3d-000000000001', contactId: '5b4c3f1e-2222-4a2b-9c3d-000000000002' });

function newsletter(): string {
  const items = Array.from({ length: 20 }, (_, i) => `<p>{{firstName}}, story ${i + 1}: <a href="https://example.com/n/${i + 1}">read</a></p>`).join('\n');
  return `<html><head><title>News</title></head><body><h1>Hello {{firstName}}</h1>\n${items}\n</body></html>`;
}

/** Templates the skeleton must serve (for a plain value), and those it must leave to the converter. */
const skeletonTemplates: string[] = [
  newsletter(),
  '<html><body><h1>Hello {{firstName}}</h1><p>Your plan: {{plan}}. <a href="https://example.com/news">Read the news</a> or <a href="https://example.com/offers">see offers</a>.</p></body></html>',
  `<mjml><mj-body>
  <mj-section><mj-column><mj-image src="https://example.com/logo.png" alt="Acme" /><mj-text font-size="20px">Hello {{firstName}}</mj-text></mj-column></mj-section>
  <mj-section><mj-column><mj-text>Story: something happened, for {{plan}} readers.</mj-text><mj-button href="https://example.com/story/1">Read more</mj-button></mj-column></mj-section>
  <mj-section><mj-column><mj-text>Change your <a href="{{manageUrl}}">preferences</a>.</mj-text></mj-column></mj-section>
</mj-body></mjml>`,
  '<p>Hi {{firstName}}, <a href="{{unsubscribeUrl}}">unsubscribe</a></p>',
  '<p>Hi {{firstName}}</p><p><a href="https://example.com/u?id={{id}}&amp;e={{email}}">your page</a></p>',
  '<p><a href="mailto:{{email}}">write</a> <a href="{{firstName}}">odd link</a> <a href="#{{plan}}">anchor</a></p>',
  '<p><a href="{{firstName}}"><img src="x.png" alt="Read"> <b>more</b></a></p>',
  '<h2>{{plan}} plan</h2><h3>For {{firstName}} {{lastName}}</h3><p>{{firstName}}{{lastName}}</p>',
  '<ul><li>{{firstName}}</li><li>{{plan}} and {{lastName}}</li></ul><ol><li>One {{plan}}</li></ol>',
  '<table><tr><th>Name</th><td>{{firstName}}</td></tr><tr><td>{{plan}}</td><td>x</td></tr></table>',
  '<pre>Code: {{firstName}}   kept   {{plan}}\n  indented</pre>',
  '<blockquote>Quote {{firstName}}</blockquote><div>({{firstName}})</div><p>[{{plan}}]</p><p>{{plan}}!</p>',
  '<p style="color:{{color}}" class="c-{{plan}}" title="{{firstName}}">Styled {{firstName}}</p><img src="https://x/{{id}}.png">',
  '<p>{{default nickname "friend"}} / {{nickname ?? firstName ?? "you"}} / {{data.plan}} / {{lookup data "plan"}}</p>',
  '<p>{{! a comment }}Hello {{~firstName~}} !</p>\n{{!-- long comment {{x}} --}}',
  '<p>Literal \\{{firstName}} and {{firstName}}</p>',
  '<p>a {{missing}}b</p><p>x{{missing}} y</p><p>({{missing}})</p>',
  'Plain text body {{firstName}} without tags',
  '<p>Hallo {{firstName}} aus القاهرة 🎉</p>',
  '<html><body><p>News</p></body></html>',
  '<p>News without body tag for {{firstName}}</p>',
  '<p>Entities &amp; {{firstName}} &lt;ok&gt; &nbsp;{{plan}}</p>',
  '<p>Count: {{count}} / {{flag}} / {{list}}</p>',
];
const fallbackTemplates: string[] = [
  '{{#each items}}<li>{{this}}</li>{{/each}}',
  '{{#if vip}}<b>VIP</b>{{else}}Hi{{/if}} {{firstName}}',
  '<p>{{{html}}}</p>',
  '<p>{{& html}}</p>',
  '<p><a href="https://example.com">{{firstName}}</a></p>',
  '<p><img src="x.png" alt="{{firstName}}"></p>',
  '<p><img src=https://x/{{id}}.png></p>',
  '<ol start="{{count}}"><li>x</li></ol>',
  '<p>&{{entity}}; &cop{{firstName}}</p>',
  '<p>a <{{tag}}>b</p>',
  '<p {{attribute}}>x</p>',
  '<!-- {{firstName}} --><p>x</p>',
];

/** Every HTML template literal of the suite with a `{{`, as far as a plain scan finds them. */
function suiteTemplates(): string[] {
  const found = new Set<string>();
  const walk = (dir: string): void => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const file = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(file);
      else if (file.endsWith('.ts') && !file.endsWith('textSkeleton.test.ts')) {
        for (const match of fs.readFileSync(file, 'utf8').matchAll(/'((?:[^'\\\n]|\\.)*)'/g)) {
          const literal = match[1].replace(/\\(.)/g, '$1');
          if (literal.includes('{{') && literal.includes('<') && literal.length < 5_000) found.add(literal);
        }
      }
    }
  };
  walk(path.join(__dirname, '..', '..'));
  return [...found];
}

const values: unknown[] = [
  'Ann',
  '',
  'A & B <c> "d" \'e\' `f` =g',
  'Zoë 山田 🎉',
  'two  spaces',
  ' leading',
  'trailing ',
  'line\nbreak',
  'tab\tx',
  'x\u00a0y',
  '\u00a0',
  'zero\u200bwidth',
  '\u2028',
  'https://example.com/x',
  '#frag',
  'mailto:a@b.example',
  'read',
  'Readmore',
  '&amp; &lt;',
  'ß straße',
  42,
  0,
  true,
  false,
  null,
  undefined,
  ['a', 'b'],
  { a: 1 },
];

function variablesWith(value: unknown): Record<string, unknown> {
  const data: Record<string, unknown> = {};
  for (const key of ['firstName', 'lastName', 'plan', 'nickname', 'color', 'count', 'flag', 'list', 'html', 'entity', 'tag', 'attribute', 'vip']) {
    if (value !== undefined) data[key] = value;
  }
  data.items = ['one', value];
  return templateVariables({ id: '5b4c3f1e-2222-4a2b-9c3d-000000000002', email: 'ann@example.com', data }, {}, links);
}

/** What the renderer's text part must be: the body rendered, the footer added as renderPrepared does, converted. */
function expectedText(body: string, variables: Record<string, unknown>, marketing: boolean): { text: string; footerUrl: string | null } {
  const html = compileTemplate('body', body).render!(variables);
  const footerUrl = marketing && !html.includes(links.unsubscribeUrl) ? links.unsubscribeUrl : null;
  if (footerUrl === null) return { text: htmlToText(html), footerUrl };
  const at = findLandmarks(html).bodyClose ?? html.length;
  return { text: htmlToText(html.slice(0, at) + unsubscribeFooter(footerUrl) + html.slice(at)), footerUrl };
}

function check(body: string): { used: number; fellBack: number } {
  const compiled = compileTemplate('body', body);
  if (!compiled.render) return { used: 0, fellBack: 0 };
  const skeleton = textSkeletonOf(compiled.handlebarsSource!);
  let used = 0;
  let fellBack = 0;
  for (const value of values) {
    const variables = variablesWith(value);
    for (const marketing of [false, true]) {
      let expected: { text: string; footerUrl: string | null };
      try {
        expected = expectedText(body, variables, marketing);
      } catch {
        continue; // does not render for this value: renderPrepared throws before any text part
      }
      const text = skeleton?.textFor(variables, expected.footerUrl) ?? null;
      if (text === null) {
        fellBack++;
        continue;
      }
      used++;
      expect({ body, value, marketing, text }).toEqual({ body, value, marketing, text: expected.text });
    }
  }
  return { used, fellBack };
}

describe('the text part from a per-template skeleton', () => {
  it.each(skeletonTemplates.map((body) => [body]))('is the converted HTML for every value, and is used: %s', (body) => {
    const { used } = check(body);
    const variables = variablesWith('Ann');
    const compiled = compileTemplate('body', body);
    for (const marketing of [false, true]) {
      const { footerUrl } = expectedText(body, variables, marketing);
      expect(textSkeletonOf(compiled.handlebarsSource!)?.textFor(variables, footerUrl) ?? null).not.toBeNull();
    }
    expect(used).toBeGreaterThan(0);
  });

  it.each(fallbackTemplates.map((body) => [body]))('is left to the converter: %s', (body) => {
    const compiled = compileTemplate('body', body);
    const skeleton = textSkeletonOf(compiled.handlebarsSource!);
    for (const value of values) {
      for (const footerUrl of [null, links.unsubscribeUrl]) expect(skeleton?.textFor(variablesWith(value), footerUrl) ?? null).toBeNull();
    }
  });

  it('is the converted HTML for every HTML template of the test suite', () => {
    const templates = suiteTemplates();
    expect(templates.length).toBeGreaterThan(20);
    let used = 0;
    for (const body of templates) used += check(body).used;
    expect(used).toBeGreaterThan(0);
  });

  it('falls back per recipient for values the converter would read otherwise', () => {
    const source = compileTemplate('body', '<p>Hi {{firstName}} there</p>').handlebarsSource!;
    const skeleton = textSkeletonOf(source)!;
    expect(skeleton.textFor(variablesWith('Ann'), null)).toBe('Hi Ann there');
    expect(textSkeletonOf(compileTemplate('body', '<p>{{missing}}</p><p>x</p>').handlebarsSource!)!.textFor(variablesWith('Ann'), null)).toBeNull();
    for (const value of ['', 'two  spaces', ' leading', 'line\nbreak', 'zero\u200bwidth']) expect(skeleton.textFor(variablesWith(value), null)).toBeNull();
  });

  it('is what renderPrepared gives, tracking on, for a campaign of recipients', () => {
    const template = preparedTemplate({ subject: 'News for {{firstName}}', body: newsletter(), type: 'MARKETING' }, { opens: true, clicks: true });
    for (let i = 0; i < 50; i++) {
      const recipientLinks = emailLinks(PUBLIC_URL, SECRET, {
        emailId: `5b4c3f1e-1111-4a2b-9c3d-${String(i).padStart(12, '0')}`,
        contactId: `5b4c3f1e-2222-4a2b-9c3d-${String(i).padStart(12, '0')}`,
      });
      const variables = templateVariables(
        { id: 'c', email: `r${i}@example.com`, data: { firstName: i % 7 ? `Reader ${'x'.repeat(i)}` : '' } },
        {},
        recipientLinks,
      );
      const rendered = renderPrepared(template, variables, recipientLinks);
      const untracked = renderPrepared(preparedTemplate({ subject: 's', body: newsletter(), type: 'MARKETING' }, null), variables, recipientLinks);
      expect(rendered.text).toBe(htmlToText(untracked.html));
      expect(rendered.text).toContain(`Unsubscribe [${recipientLinks.unsubscribeUrl}]`);
    }
  });
});
