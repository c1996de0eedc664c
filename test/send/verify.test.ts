import { startTestStack, type TestStack } from '../support/testStack';
import { startTestDnsServer, type TestDnsServer } from '../support/dnsServer';
import { accountWithProject, type TestProject } from '../support/accounts';

let dns: TestDnsServer;
let stack: TestStack;
let project: TestProject;

/** A domain as a mail provider publishes it: its own zone (NS), a mail server, a website. */
function publishMailDomain(domain: string, options: { mx?: boolean; website?: boolean } = {}) {
  dns.setNs(domain, [`ns1.${domain}`, `ns2.${domain}`]);
  if (options.mx ?? true) dns.setMx(domain, [{ exchange: `mx.${domain}`, priority: 10 }]);
  if (options.website ?? true) {
    dns.setA(domain, ['192.0.2.10']);
    dns.setAaaa(domain, ['2001:db8::10']);
  }
}

beforeAll(async () => {
  dns = await startTestDnsServer();
  stack = await startTestStack({ env: { DNS_SERVERS: dns.address, DNS_TIMEOUT_MS: '300' } });
  ({ project } = await accountWithProject(stack.http));
  publishMailDomain('acme.test');
  for (const provider of ['gmail.com', 'mailinator.com', 'privaterelay.appleid.com', 'mozmail.com', 'addy.io', 'gmial.com']) publishMailDomain(provider);
  // addy.io gives every user a subdomain of their own, with its own MX records.
  dns.setMx('ada.addy.io', [{ exchange: 'mail.addy.io', priority: 10 }]);
});

afterAll(async () => {
  await stack?.stop();
  await dns?.close();
});

afterEach(() => dns.failWith(null));

const verify = (email: unknown, key = project.secretKey) => stack.http.post('/v1/verify', { email }, { key });

async function verified(email: unknown) {
  const res = await verify(email);
  expect(res.status).toBe(200);
  expect(res.body.success).toBe(true);
  return res.body.data;
}

describe('POST /v1/verify', () => {
  it('answers every field of the result for a deliverable company address', async () => {
    const res = await verify('Ada.Lovelace@Acme.TEST');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      success: true,
      data: {
        email: 'ada.lovelace@acme.test',
        valid: true,
        isDisposable: false,
        isAlias: false,
        isTypo: false,
        isPlusAddressed: false,
        isPersonalEmail: false,
        domainExists: true,
        hasWebsite: true,
        hasMxRecords: true,
        reasons: ['Email appears to be valid'],
      },
    });
  });

  it('asks NS, MX, A and AAAA of the domain through DNS_SERVERS', async () => {
    dns.questions.length = 0;
    await verified('someone@acme.test');
    expect([...dns.questions].sort()).toEqual(['A acme.test', 'AAAA acme.test', 'MX acme.test', 'NS acme.test']);
  });

  it.each([
    ['', /empty/],
    ['plainaddress', /no @/],
    ['two@@acme.test', /more than one @/],
    ['@acme.test', /nothing before the @/],
    ['ada@', /nothing after the @/],
    ['ada@localhost', /at least two labels/],
    ['ada@192.168.1.10', /IP address/],
    ['ada..l@acme.test', /two dots in a row/],
    ['.ada@acme.test', /starts or ends with a dot/],
    ['a da@acme.test', /spaces/],
    ['"ada"@acme.test', /characters an address cannot hold/],
    ['ada@acme_corp.test', /not a valid label/],
    [`${'a'.repeat(65)}@acme.test`, /longer than 64/],
    [`${'a'.repeat(64)}@${['b', 'c', 'd', 'e'].map((c) => c.repeat(50)).join('.')}.test`, /longer than 254/],
  ])('answers %j as malformed (valid false, a reason, nothing looked up)', async (email, reason) => {
    dns.questions.length = 0;
    const data = await verified(email);
    expect(data).toEqual({
      email,
      valid: false,
      isDisposable: false,
      isAlias: false,
      isTypo: false,
      isPlusAddressed: false,
      isPersonalEmail: false,
      domainExists: false,
      hasWebsite: false,
      hasMxRecords: false,
      reasons: [expect.stringMatching(/^Email address is malformed: /)],
    });
    expect(data.reasons[0]).toMatch(reason);
    expect(dns.questions).toEqual([]);
  });

  it('says a domain without nameservers does not exist (and so has no MX): not valid', async () => {
    const data = await verified('ada@never-registered.test');
    expect(data).toMatchObject({ valid: false, domainExists: false, hasMxRecords: false, hasWebsite: false });
    expect(data.reasons).toEqual([
      'The domain never-registered.test does not exist (it has no nameservers)',
      'The domain never-registered.test has no MX records, so it cannot receive email',
    ]);
  });

  it('finds the nameservers of a mail subdomain in its parent zone, but does not lend them to a name without records', async () => {
    dns.setMx('mail.acme.test', [{ exchange: 'mx.acme.test', priority: 5 }]);
    expect(await verified('ada@mail.acme.test')).toMatchObject({
      valid: true,
      domainExists: true,
      hasMxRecords: true,
      hasWebsite: false,
      reasons: ['Email appears to be valid'],
    });
    const missing = await verified('ada@nothing-here.acme.test');
    expect(missing).toMatchObject({ valid: false, domainExists: false, hasMxRecords: false });
  });

  it('is not valid when the domain exists but has no MX records (a website alone does not receive mail)', async () => {
    publishMailDomain('brochure.test', { mx: false });
    const data = await verified('ada@brochure.test');
    expect(data).toMatchObject({ valid: false, domainExists: true, hasWebsite: true, hasMxRecords: false });
    expect(data.reasons).toEqual(['The domain brochure.test has no MX records, so it cannot receive email']);
  });

  it('treats a null MX (RFC 7505) as a domain that accepts no mail', async () => {
    publishMailDomain('nomail.test', { mx: false });
    dns.setMx('nomail.test', [{ exchange: '.', priority: 0 }]);
    const data = await verified('ada@nomail.test');
    expect(data).toMatchObject({ valid: false, domainExists: true, hasMxRecords: false });
    expect(data.reasons).toEqual(['The domain nomail.test declares that it accepts no email (null MX record)']);
  });

  it('flags a disposable domain from the shipped list, without making it invalid', async () => {
    const data = await verified('throwaway@mailinator.com');
    expect(data).toMatchObject({ valid: true, isDisposable: true, isAlias: false, isTypo: false });
    expect(data.reasons).toEqual(['The domain mailinator.com belongs to a disposable (temporary) email service']);
  });

  it('calls a free-mail address personal, with nothing to report', async () => {
    const data = await verified('ada@gmail.com');
    expect(data).toMatchObject({ valid: true, isPersonalEmail: true, isDisposable: false, isTypo: false, isAlias: false });
    expect(data.suggestedEmail).toBeUndefined();
    expect(data.reasons).toEqual(['Email appears to be valid']);
  });

  it.each(['abc123@privaterelay.appleid.com', 'xyz.789@mozmail.com', 'shop@ada.addy.io'])('flags %s as a forwarding alias, not a typo', async (email) => {
    const data = await verified(email);
    expect(data).toMatchObject({ valid: true, isAlias: true, isPersonalEmail: true, isTypo: false, isDisposable: false });
    expect(data.reasons).toEqual([expect.stringMatching(/forwarding \(alias\) service/)]);
  });

  it('flags plus addressing', async () => {
    const data = await verified('ada+newsletter@acme.test');
    expect(data).toMatchObject({ valid: true, isPlusAddressed: true });
    expect(data.reasons).toEqual(['The address uses plus addressing (a +tag in the part before the @)']);
  });

  it('suggests the provider a misspelt domain was meant to be', async () => {
    const gmial = await verified('Ada@GMIAL.com');
    expect(gmial).toMatchObject({ isTypo: true, suggestedEmail: 'ada@gmail.com', isDisposable: true, valid: true });
    expect(gmial.reasons).toContain('The domain gmial.com looks like a typo: did you mean ada@gmail.com?');

    // An unregistered typo: suggested, and not valid either.
    const gmailCo = await verified('ada@gmail.co');
    expect(gmailCo).toMatchObject({ isTypo: true, suggestedEmail: 'ada@gmail.com', valid: false, domainExists: false });
  });

  it('does not call real domains that are near a provider typos', async () => {
    publishMailDomain('acme.com');
    for (const email of ['ada@acme.com', 'ada@mozmail.com', 'ada@gmail.com']) {
      const data = await verified(email);
      expect(data.isTypo).toBe(false);
      expect(data.suggestedEmail).toBeUndefined();
    }
  });

  it('checks an internationalised domain in its punycode form', async () => {
    publishMailDomain('xn--bcher-kva.test');
    const data = await verified('ada@bücher.test');
    expect(data).toMatchObject({ email: 'ada@bücher.test', valid: true, domainExists: true, hasMxRecords: true });
  });

  it('answers a non-ASCII local part and CR/LF inside the value as malformed', async () => {
    expect((await verified('ädä@acme.test')).reasons).toEqual([expect.stringMatching(/non-ASCII/)]);
    for (const email of ['ada@acme.test\r\nBcc: victim@acme.test', 'ada@acme.test\r\n', '\u0007ada@acme.test']) {
      const data = await verified(email);
      expect(data).toMatchObject({ email, valid: false, domainExists: false });
      expect(data.reasons).toEqual(['Email address is malformed: it contains control characters (such as CR or LF)']);
    }
    // NUL is refused for every JSON body before any route sees it (lib/untrustedJson.ts).
    const nul = await verify('\u0000ada@acme.test');
    expect(nul.status).toBe(400);
  });

  it('does not fail when the DNS server stays silent or answers SERVFAIL: the lookups are reported as failed, not as a 500', async () => {
    for (const mode of ['SILENCE', 'SERVFAIL'] as const) {
      dns.failWith(mode);
      const code = mode === 'SILENCE' ? 'ETIMEOUT' : 'ESERVFAIL';
      const res = await verify('ada@acme.test');
      expect(res.status).toBe(200);
      expect(res.body.data).toMatchObject({ valid: false, domainExists: false, hasMxRecords: false, hasWebsite: false });
      expect(res.body.data.reasons).toEqual([
        `Could not look up the nameservers of acme.test (DNS lookup failed: ${code}), so the domain is reported as not existing`,
        `Could not look up the MX records of acme.test (DNS lookup failed: ${code}), so it is reported as having none`,
        `Could not look up the website (A/AAAA records) of acme.test (DNS lookup failed: ${code})`,
      ]);
    }
  });

  it('refuses the public key with 401 INVALID_API_KEY, and no key with 401', async () => {
    const pk = await verify('ada@acme.test', project.publicKey);
    expect(pk.status).toBe(401);
    expect(pk.body.error.code).toBe('INVALID_API_KEY');
    expect(pk.body.error.message).toMatch(/secret key/);
    const none = await stack.http.post('/v1/verify', { email: 'ada@acme.test' });
    expect(none.status).toBe(401);
  });

  it('refuses a missing body, a missing or non-string email with 422 naming email', async () => {
    const empty = await stack.http.request('POST', '/v1/verify', { key: project.secretKey });
    expect(empty.status).toBe(422);
    expect(empty.body.error).toMatchObject({
      code: 'VALIDATION_ERROR',
      errors: [{ field: 'email', code: 'invalid_type', message: 'Email is required', received: 'undefined' }],
    });
    for (const email of [42, null, ['ada@acme.test'], { address: 'ada@acme.test' }, true]) {
      const res = await verify(email);
      expect(res.status).toBe(422);
      expect(res.body.error.errors).toEqual([expect.objectContaining({ field: 'email', code: 'invalid_type' })]);
    }
    const notObject = await stack.http.post('/v1/verify', ['ada@acme.test'], { key: project.secretKey });
    expect(notObject.status).toBe(422);
    const notJson = await stack.http.request('POST', '/v1/verify', {
      key: project.secretKey,
      rawBody: '{"email":',
      headers: { 'Content-Type': 'application/json' },
    });
    expect(notJson.status).toBe(400);
    expect(notJson.body.error.code).toBe('INVALID_REQUEST_BODY');
  });

  it('refuses a huge value with 422 (or 413 past the body limit), never a 500', async () => {
    const long = await verify(`${'a'.repeat(2000)}@acme.test`);
    expect(long.status).toBe(422);
    expect(long.body.error.errors).toEqual([expect.objectContaining({ field: 'email', code: 'too_big' })]);
    const huge = await verify(`${'ü'.repeat(3_000_000)}@acme.test`);
    expect([413, 422]).toContain(huge.status);
  });
});
