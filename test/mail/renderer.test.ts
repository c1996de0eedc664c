import { checkTemplate, renderEmail, TemplateRenderError, type RenderInput } from '../../mail/rendering/renderEmail';
import { templateVariables } from '../../services/sending/templateVariables';
import { compileMjml } from '../../mail/rendering/mjmlCompiler';
import { MAX_PLACEHOLDERS } from '../../mail/rendering/templateCompiler';
import { MAX_HTML_DEPTH } from '../../mail/rendering/htmlLandmarks';
import { emailLinks, verifyClickSignature } from '../../mail/links/signedLinks';

const PUBLIC_URL = 'https://mail.example.test';
const SECRET = 'renderer-test-secret-renderer-test-secret';
const emailId = '0b7d3c1e-5a4f-4e2b-9c8d-7e6f5a4b3c2d';
const contact = { id: '9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d', email: 'ann@example.com', data: { name: 'Ann', plan: { name: 'Pro', seats: 3 } } };
const links = emailLinks(PUBLIC_URL, SECRET, { emailId, contactId: contact.id });

function render(body: string, extra: Partial<RenderInput> = {}, data: Record<string, unknown> = {}) {
  return renderEmail({ subject: 'Hello', body, type: 'TRANSACTIONAL', variables: templateVariables(contact, data, extra.links), ...extra });
}

function hrefs(html: string): string[] {
  return [...html.matchAll(/href="([^"]*)"/g)].map((m) => m[1].replace(/&amp;/g, '&'));
}

/** The error renderEmail throws, asserting it is a TemplateRenderError. */
function renderError(input: Partial<RenderInput>): TemplateRenderError {
  try {
    renderEmail({ subject: 'Hi', body: '<p>Hi</p>', type: 'TRANSACTIONAL', variables: {}, ...input });
  } catch (error) {
    expect(error).toBeInstanceOf(TemplateRenderError);
    return error as TemplateRenderError;
  }
  throw new Error('renderEmail did not throw');
}

describe('variables', () => {
  it('escapes {{var}}, keeps {{{var}}} raw and renders a missing variable empty', () => {
    const { html } = render('<p>{{snippet}}|{{{snippet}}}|{{nothing}}|{{nothing.deeper}}</p>', {}, { snippet: '<b>"Tom" & Jerry</b>' });
    expect(html).toBe('<p>&lt;b&gt;&quot;Tom&quot; &amp; Jerry&lt;/b&gt;|<b>"Tom" & Jerry</b>||</p>');
  });

  it('offers contact data at top level and under data., request data over it, reserved names over both', () => {
    const variables = templateVariables(
      contact,
      { plan: { name: 'Team' }, coupon: { value: 'SAVE10', persistent: false }, email: 'evil@example.com', name: '' },
      links,
    );
    const { html } = renderEmail({
      subject: 's',
      type: 'TRANSACTIONAL',
      variables,
      body: '{{name}} {{data.name}} {{plan.name}} {{data.plan.name}} {{coupon}} {{email}} {{mailroom_email}} {{id}} {{mailroom_id}} {{manageUrl}}',
    });
    expect(html).toBe(`Ann Ann Team Team SAVE10 ann@example.com ann@example.com ${contact.id} ${contact.id} ${links.manageUrl}`);
  });

  it('reads nested paths, including array indexes and loops over contact data', () => {
    const { html } = render(
      '{{data.plan.name}}/{{plan.seats}}/{{items.[1].sku}}/{{#each items}}{{sku}}{{#unless @last}},{{/unless}}{{/each}}',
      {},
      {
        items: [{ sku: 'A1' }, { sku: 'B2' }],
      },
    );
    expect(html).toBe('Pro/3/B2/A1,B2');
  });

  it('cannot reach prototype properties', () => {
    const { html } = render('[{{constructor}}][{{name.constructor.name}}][{{__proto__}}]');
    expect(html).toBe('[][][]');
  });
});

describe('fallbacks', () => {
  it('accepts {{var ?? "fallback"}} with double or single quotes, and {{default var "fallback"}}', () => {
    const body = '{{first ?? "friend"}}|{{first ?? \'pal\'}}|{{default first "mate"}}|{{name ?? "friend"}}|{{ empty ?? "was empty" }}';
    expect(render(body, {}, { empty: { value: '', persistent: false } }).html).toBe('friend|pal|mate|Ann|was empty');
  });

  it('keeps raw and escaped forms, chains, and whitespace control', () => {
    const body = '{{{html ?? "<i>none</i>"}}}|{{html ?? "<i>none</i>"}}|{{a ?? b ?? "c"}}|  {{~first ?? "x"~}}  |';
    expect(render(body).html).toBe('<i>none</i>|&lt;i&gt;none&lt;/i&gt;|c|x|');
    expect(render('{{{html ?? "x"}}}', {}, { html: '<b>bold</b>' }).html).toBe('<b>bold</b>');
  });

  it('leaves ?? alone in text, in string literals, in comments and in escaped mustaches', () => {
    const body = 'Really?? {{default first "who ?? knows"}} {{! first ?? "x" }} \\{{first ?? "y"}}';
    expect(render(body).html).toBe('Really?? who ?? knows  {{first ?? "y"}}');
  });

  it('does not rewrite a fallback after a helper call: the unknown helper is reported', () => {
    expect(checkTemplate({ subject: 's', body: '{{upper name ?? "y"}}' })).toEqual([
      { field: 'body', message: expect.stringContaining('unknown helper "upper"') },
    ]);
  });
});

describe('template problems', () => {
  it('reports an unknown helper and broken syntax per field, and renderEmail throws them', () => {
    const problems = checkTemplate({ subject: 'Hi {{shout name}}', body: '<p>{{#if name}}unclosed</p>' });
    expect(problems).toEqual([
      { field: 'subject', message: expect.stringContaining('unknown helper "shout"') },
      { field: 'body', message: expect.stringContaining('Parse error on line 1') },
    ]);
    expect(problems[1].message).toContain('unexpected end of template');

    const error = renderError({ subject: 'Hi {{shout name}}', body: '<p>{{#if name}}unclosed</p>' });
    expect(error.problems).toEqual(problems);
  });

  it('reports mismatched blocks and missing partials; a good template has no problems', () => {
    expect(checkTemplate({ subject: 'ok', body: '{{#if a}}x{{/each}}' })[0].message).toContain("if doesn't match each");
    expect(checkTemplate({ subject: 'ok', body: '{{> footer}}' })[0].message).toContain('partial footer could not be found');
    expect(checkTemplate({ subject: 'Hi {{name ?? "there"}}', body: '<p>{{#each items}}{{this}}{{else}}none{{/each}}</p>' })).toEqual([]);
  });

  it('refuses placeholders beyond the limit and loops beyond the budget', () => {
    expect(checkTemplate({ subject: 's', body: '{{a}}'.repeat(MAX_PLACEHOLDERS + 1) })[0].message).toContain('placeholders');
    const looped = renderError({
      body: '{{#each list}}{{#each ../list}}{{#each ../../list}}x{{/each}}{{/each}}{{/each}}',
      variables: { list: Array.from({ length: 100 }, (_, i) => i) },
    });
    expect(looped.problems[0]).toEqual({ field: 'body', message: expect.stringContaining('loops may run at most') });
  });
});

describe('MJML', () => {
  const mjml = `<!-- newsletter -->
<mjml>
  <mj-body>
    <mj-section background-color="{{brandColor}}">
      <mj-column>
        <mj-text>Hello {{name ?? "there"}}, you are on {{data.plan.name}}</mj-text>
        <mj-button href="https://example.com/account">Your account</mj-button>
      </mj-column>
    </mj-section>
  </mj-body>
</mjml>`;

  it('compiles MJML first, then Handlebars over the result', () => {
    const { html, text } = render(mjml, {}, { brandColor: '#ff0066' });
    expect(html).toMatch(/^<!doctype html>/i);
    expect(html).toContain('<table');
    expect(html).toContain('Hello Ann, you are on Pro');
    expect(html).toContain('background-color:#ff0066');
    expect(html).not.toContain('<mj-');
    expect(text).toContain('Hello Ann, you are on Pro');
    expect(text).toContain('Your account [https://example.com/account]');
  });

  it('caches the MJML output per source', () => {
    const first = compileMjml(mjml);
    expect(compileMjml(mjml)).toBe(first);
    expect(compileMjml(`${mjml} `)).not.toBe(first);
  });

  it('reports MJML errors, but not for attributes that hold placeholders', () => {
    const problems = checkTemplate({
      subject: 's',
      body: '<mjml><mj-body><mj-section><mj-column><mj-unknown>x</mj-unknown></mj-column></mj-section></mj-body></mjml>',
    });
    expect(problems).toEqual([{ field: 'body', message: expect.stringMatching(/MJML line 1: Element mj-unknown doesn't exist/) }]);
    expect(problems[0].message).not.toContain('/'); // no server paths in messages
    expect(checkTemplate({ subject: 's', body: mjml })).toEqual([]);
  });

  it('does not read files through mj-include', () => {
    const { html } = render('<mjml><mj-body><mj-include path="/etc/passwd" /></mj-body></mjml>');
    expect(html).not.toContain('root:');
  });
});

describe('subject', () => {
  it('is rendered, never HTML-escaped, and made single-line', () => {
    const rendered = renderEmail({
      subject: '{{greeting}}, {{name}} & co <{{company ?? "Acme"}}>',
      body: '<p>x</p>',
      type: 'TRANSACTIONAL',
      variables: templateVariables(contact, { greeting: 'Hi\r\nBcc: victim@example.com\n' }),
    });
    expect(rendered.subject).toBe('Hi Bcc: victim@example.com , Ann & co <Acme>');
  });
});

describe('text part', () => {
  it('is derived from the HTML, links as "text [url]", without head, styles or the pixel', () => {
    const body = `<html><head><title>T</title><style>p{color:red}</style></head><body>
      <h1>Welcome</h1><p>Read <a href="https://example.com/docs?a=1&amp;b=2">the docs</a> or <a href="https://example.com">https://example.com</a>.</p>
      <img src="https://example.com/logo.png" alt="Acme logo"></body></html>`;
    const { text } = render(body, { links, tracking: { opens: true, clicks: true } });
    expect(text).toContain('WELCOME');
    expect(text).toContain('Read the docs [https://example.com/docs?a=1&b=2] or https://example.com.');
    expect(text).toContain('Acme logo');
    expect(text).not.toContain('color:red');
    expect(text).not.toContain('/t/c/');
    expect(text).not.toContain('/t/o/');
  });
});

describe('unsubscribe footer and headers', () => {
  const oneClick = { 'List-Unsubscribe': `<${links.unsubscribeUrl}>`, 'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click' };

  it('MARKETING mail gets a footer inside <body> and the one-click headers', () => {
    const { html, text, headers } = render('<html><body><p>News</p></body></html>', { type: 'MARKETING', links });
    expect(headers).toEqual(oneClick);
    expect(html).toMatch(new RegExp(`<p>News</p><div [^>]*>.*<a href="${escapeRegExp(links.unsubscribeUrl)}"[^>]*>Unsubscribe</a></div></body></html>$`));
    expect(text.replace(/\s+/g, ' ')).toContain(`Unsubscribe [${links.unsubscribeUrl}]`);
  });

  it('appends the footer at the end when there is no <body>', () => {
    const { html } = render('<p>News</p>', { type: 'MARKETING', links });
    expect(html.startsWith('<p>News</p><div')).toBe(true);
    expect(html.endsWith('</div>')).toBe(true);
  });

  it('MARKETING mail that has its own unsubscribe link gets no second footer', () => {
    const { html, headers } = render('<p>News. <a href="{{unsubscribeUrl}}">Stop these</a></p>', { type: 'MARKETING', links });
    expect(headers).toEqual(oneClick);
    expect(html.split(links.unsubscribeUrl)).toHaveLength(2);
    expect(html).not.toContain('>Unsubscribe</a>');
  });

  it('TRANSACTIONAL and HEADLESS mail gets neither', () => {
    for (const type of ['TRANSACTIONAL', 'HEADLESS'] as const) {
      const { html, headers } = render('<p>Your receipt</p>', { type, links });
      expect(html).toBe('<p>Your receipt</p>');
      expect(headers).toEqual({});
    }
  });

  it('TRANSACTIONAL mail that uses {{unsubscribeUrl}} gets the headers but no footer', () => {
    const { html, headers } = render('<p><a href="{{unsubscribeUrl}}">Unsubscribe from reminders</a></p>', { type: 'TRANSACTIONAL', links });
    expect(headers).toEqual(oneClick);
    expect(html).toBe(`<p><a href="${links.unsubscribeUrl}">Unsubscribe from reminders</a></p>`);
  });

  it('without links there is nothing to link to: no footer, no headers, the variables are empty', () => {
    const { html, headers } = render('<p>[{{unsubscribeUrl}}]</p>', { type: 'MARKETING' });
    expect(html).toBe('<p>[]</p>');
    expect(headers).toEqual({});
  });
});

describe('tracking', () => {
  const body = `<html><body>
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
</body></html>`;

  function clickTarget(href: string): string | null {
    const prefix = `${PUBLIC_URL}/t/c/${emailId}?`;
    if (!href.startsWith(prefix)) return null;
    const query = new URLSearchParams(href.slice(prefix.length));
    const url = query.get('url')!;
    expect(verifyClickSignature(SECRET, emailId, url, query.get('sig')!)).toBe(true);
    return url;
  }

  it('rewrites every http(s) link to a signed click redirect, after variables are resolved', () => {
    const { html } = render(body, { type: 'MARKETING', links, tracking: { opens: false, clicks: true } });
    const targets = hrefs(html).map((h) => clickTarget(h) ?? `untracked ${h}`);
    expect(targets).toEqual([
      'https://example.com/a?x=1&y=2',
      `http://example.com/b/${contact.id}`,
      'https://example.com/c',
      'https://example.com/spaced',
      'untracked mailto:help@example.com',
      'untracked tel:+15551234',
      'untracked #top',
      'untracked /relative',
      `untracked ${links.manageUrl}`,
      `untracked ${links.unsubscribeUrl}`,
      `untracked ${links.subscribeUrl}`,
      'untracked https://example.com/outlook',
    ]);
    expect(html).toContain('<a class="b" href="');
    expect(html).not.toContain('/t/o/');
  });

  it('appends a 1×1 open pixel at the end of the body', () => {
    const { html } = render('<html><body><p>x</p></body></html>', { links, tracking: { opens: true, clicks: false } });
    expect(html).toMatch(new RegExp(`<p>x</p><img src="${escapeRegExp(links.openPixelUrl)}" width="1" height="1" alt=""[^>]*/></body></html>$`));
  });

  it('puts the pixel after the footer and tracks nothing when tracking is off', () => {
    const tracked = render('<p><a href="https://example.com">x</a></p>', { type: 'MARKETING', links, tracking: { opens: true, clicks: true } }).html;
    expect(tracked.indexOf(links.openPixelUrl)).toBeGreaterThan(tracked.indexOf('Unsubscribe</a>'));
    const untracked = render('<p><a href="https://example.com">x</a></p>', { links, tracking: { opens: false, clicks: false } }).html;
    expect(untracked).toBe('<p><a href="https://example.com">x</a></p>');
  });
});

describe('unicode', () => {
  it('renders non-ASCII subjects, bodies and link targets intact', () => {
    const variables = templateVariables({ ...contact, data: { name: 'Zoë 山田 🎉', city: 'القاهرة' } }, {}, links);
    const rendered = renderEmail({
      subject: 'Grüße, {{name}} ✉',
      body: '<html><body><p>Hallo {{name}} aus {{city}}</p><a href="https://例え.jp/パス?q=ü">ü</a></body></html>',
      type: 'MARKETING',
      variables,
      links,
      tracking: { opens: true, clicks: true },
    });
    expect(rendered.subject).toBe('Grüße, Zoë 山田 🎉 ✉');
    expect(rendered.html).toContain('<p>Hallo Zoë 山田 🎉 aus القاهرة</p>');
    expect(rendered.text).toContain('Hallo Zoë 山田 🎉 aus القاهرة');
    const tracked = new URL(hrefs(rendered.html)[0]);
    expect(tracked.searchParams.get('url')).toBe('https://例え.jp/パス?q=ü');
  });
});

describe('guard rails', () => {
  it('renders a 1 MB template', () => {
    const paragraph = '<p>Hello {{name}}, read <a href="https://example.com/{{id}}">this</a> and more text to fill the line nicely.</p>\n';
    const body = `<html><body>${'<p>static filler text</p>'.repeat(37_000)}${paragraph.repeat(1_000)}</body></html>`;
    expect(body.length).toBeGreaterThan(1_000_000);
    const { html, text } = render(body, { type: 'MARKETING', links, tracking: { opens: true, clicks: true } });
    expect(html).toContain(`Hello Ann, read <a href="${PUBLIC_URL}/t/c/`);
    expect(text.replace(/\s+/g, ' ')).toContain(`this [https://example.com/${contact.id}]`);
  });

  it('refuses HTML nested deeper than the limit, in the template or through a raw variable, quickly', () => {
    const deepHtml = `${'<div>'.repeat(80_000)}<a href="https://example.com">x</a>${'</div>'.repeat(80_000)}`;
    expect(checkTemplate({ subject: 's', body: deepHtml })).toEqual([
      { field: 'body', message: `HTML elements may nest at most ${MAX_HTML_DEPTH} levels deep` },
    ]);
    const viaVariable = renderError({ body: '<p>{{{snippet}}}</p>', variables: { snippet: '<b>'.repeat(MAX_HTML_DEPTH + 1) } });
    expect(viaVariable.problems).toEqual([{ field: 'body', message: expect.stringContaining('nest at most') }]);
    const fine = `${'<div>'.repeat(MAX_HTML_DEPTH - 1)}<a href="https://example.com">{{name}}</a>${'</div>'.repeat(MAX_HTML_DEPTH - 1)}<br><img src="x">`;
    const { html, text } = render(fine, { type: 'MARKETING', links, tracking: { opens: true, clicks: true } });
    expect(html).toContain('/t/c/');
    expect(text).toContain('Ann');
  });

  it('copes with deeply nested variables', () => {
    let deep: Record<string, unknown> = { leaf: 'bottom' };
    for (let i = 0; i < 10_000; i++) deep = { n: deep };
    const variables = templateVariables({ ...contact, data: { deep } }, { more: { value: deep, persistent: false } });
    const rendered = renderEmail({ subject: '{{deep.n.n.n}}', body: '{{deep.n.n.leaf}}|{{data.deep}}|{{more.n.n}}', type: 'TRANSACTIONAL', variables });
    expect(rendered.html).toBe('|[object Object]|[object Object]');
  });

  it('reports blocks nested too deeply instead of overflowing the stack', () => {
    const body = `${'{{#if name}}'.repeat(2_400)}x${'{{/if}}'.repeat(2_400)}`;
    const problems = checkTemplate({ subject: 's', body });
    expect(problems).toEqual([{ field: 'body', message: 'the template nests too deeply' }]);
  });

  it('refuses a body over the size limit', () => {
    expect(checkTemplate({ subject: 's', body: 'x'.repeat(2_000_001) })[0].message).toContain('at most 2000000 characters');
  });
});

function escapeRegExp(value: string): string {
  return value.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
