import crypto from 'node:crypto';
import nodemailer from 'nodemailer';
import { dkimVerify } from 'mailauth/lib/dkim/verify';
import { startTestStack, type TestStack } from '../support/testStack';
import { startTestDnsServer, type TestDnsServer } from '../support/dnsServer';
import { accountWithProject, type TestProject } from '../support/accounts';
import { eventually } from '../support/eventually';
import { domainRepository } from '../../db/domains/domainRepository';
import { checkDomain, recheckDomains } from '../../services/domains/domainVerification';
import { createDnsResolver, DnsTemporaryFailure, dnsResolverFromConfig } from '../../lib/dns/dnsResolver';
import { domainRecheckScheduleId } from '../../worker/schedules';

const SPF_INCLUDE = 'spf.relay.test';

let dns: TestDnsServer;
let stack: TestStack;

beforeAll(async () => {
  dns = await startTestDnsServer();
  stack = await startTestStack({ env: { DNS_SERVERS: dns.address, DNS_TIMEOUT_MS: '300', SPF_INCLUDE } });
});

afterAll(async () => {
  await stack?.stop();
  await dns?.close();
});

afterEach(() => dns.failWith(null));

async function addDomain(project: TestProject, domain: string) {
  const res = await stack.http.post('/domains', { domain }, { key: project.secretKey });
  expect(res.status).toBe(201);
  return res.body;
}

const recordOf = (domain: any, purpose: string) => domain.records.find((r: any) => r.purpose === purpose);

/** Publishes the DKIM record the API asked for, exactly as given. */
function publishDkim(domain: any) {
  const dkim = recordOf(domain, 'DKIM');
  dns.setTxt(dkim.name, [dkim.value]);
}

const verify = (project: TestProject, id: string) => stack.http.get(`/domains/${id}/verify`, { key: project.secretKey });

describe('POST /domains', () => {
  it('answers the domain record with the DKIM, SPF and DMARC records to add, for a 2048-bit key', async () => {
    const { project } = await accountWithProject(stack.http);
    const domain = await addDomain(project, '  Mail.Example.COM. ');
    expect(domain).toEqual({
      id: expect.any(String),
      domain: 'mail.example.com',
      status: 'PENDING',
      verified: false,
      records: [
        {
          type: 'TXT',
          name: expect.stringMatching(/^mailroom[0-9a-f]{6}\._domainkey\.mail\.example\.com$/),
          value: expect.stringMatching(/^v=DKIM1; k=rsa; p=[A-Za-z0-9+/=]+$/),
          purpose: 'DKIM',
          verified: false,
        },
        { type: 'TXT', name: 'mail.example.com', value: `v=spf1 include:${SPF_INCLUDE} ~all`, purpose: 'SPF', verified: false },
        { type: 'TXT', name: '_dmarc.mail.example.com', value: 'v=DMARC1; p=none;', purpose: 'DMARC', verified: false },
      ],
      lastCheckedAt: null,
      verifiedAt: null,
      projectId: project.id,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    const p = /p=(\S+)$/.exec(recordOf(domain, 'DKIM').value)![1];
    const key = crypto.createPublicKey({ key: Buffer.from(p, 'base64'), format: 'der', type: 'spki' });
    expect(key.asymmetricKeyType).toBe('rsa');
    expect(key.asymmetricKeyDetails?.modulusLength).toBe(2048);
  });

  it('gives every domain its own key and selector', async () => {
    const { project } = await accountWithProject(stack.http);
    const [a, b] = await Promise.all([addDomain(project, 'one.example.com'), addDomain(project, 'two.example.com')]);
    expect(recordOf(a, 'DKIM').value).not.toBe(recordOf(b, 'DKIM').value);
    expect(recordOf(a, 'DKIM').name.split('.')[0]).not.toBe(recordOf(b, 'DKIM').name.split('.')[0]);
  });

  it('stores internationalised names in punycode', async () => {
    const { project } = await accountWithProject(stack.http);
    const domain = await addDomain(project, 'Bücher.example');
    expect(domain.domain).toBe('xn--bcher-kva.example');
  });

  it.each([
    ['', /required/i],
    ['localhost', /two labels/],
    ['https://example.com', /scheme/],
    ['example.com/path', /scheme or path/],
    ['user@example.com', /email address/],
    ['*.example.com', /Wildcard/],
    ['192.168.1.10', /IP address/],
    ['[::1]', /IP address/],
    ['example.com:25', /port/],
    ['exa mple.com', /spaces/],
    ['a..example.com', /empty labels/],
    ['-bad.example.com', /not a valid label/],
    ['under_score.example.com', /not a valid label/],
    [`${'a'.repeat(64)}.example.com`, /63/],
    [`${Array.from({ length: 64 }, () => 'abc').join('.')}.com`, /253/],
  ])('refuses %j with a 422 naming domain', async (input, message) => {
    const { project } = await accountWithProject(stack.http);
    const res = await stack.http.post('/domains', { domain: input }, { key: project.secretKey });
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('VALIDATION_ERROR');
    expect(res.body.error.errors).toEqual([expect.objectContaining({ field: 'domain', message: expect.stringMatching(message) })]);
  });

  it('refuses a missing or non-string domain with a 422', async () => {
    const { project } = await accountWithProject(stack.http);
    for (const body of [{}, { domain: 42 }, { domain: null }]) {
      const res = await stack.http.post('/domains', body, { key: project.secretKey });
      expect(res.status).toBe(422);
      expect(res.body.error.errors[0].field).toBe('domain');
    }
  });

  it('refuses a domain the project already has (409), in any spelling; another project may add it', async () => {
    const { project } = await accountWithProject(stack.http);
    await addDomain(project, 'dup.example.com');
    const again = await stack.http.post('/domains', { domain: 'DUP.example.com.' }, { key: project.secretKey });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('CONFLICT');
    const { project: other } = await accountWithProject(stack.http);
    await addDomain(other, 'dup.example.com');
  });

  it('needs the secret key', async () => {
    const { project } = await accountWithProject(stack.http);
    const res = await stack.http.post('/domains', { domain: 'pk.example.com' }, { key: project.publicKey });
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('INVALID_API_KEY');
  });

  it('keeps the private key sealed in the database, never in plain text', async () => {
    const { project } = await accountWithProject(stack.http);
    const domain = await addDomain(project, 'sealed.example.com');
    const [row] = await stack.orm.em.fork().execute(`select * from domains where id = ?`, [domain.id]);
    const stored = JSON.stringify(row);
    expect(stored).not.toMatch(/PRIVATE KEY/);
    expect(row.dkim_private_key_sealed).toMatch(/^v1\./);
    const privateKey = domainRepository.dkimPrivateKeyPem(stack.config.secret, {
      ...(await domainRepository.findById(stack.orm.em.fork(), project.id, domain.id))!,
    });
    expect(privateKey).toMatch(/^-----BEGIN PRIVATE KEY-----/);
    // Base64 of the DER inside the PEM does not appear in the row either.
    expect(stored).not.toContain(privateKey.split('\n')[1]);
  });
});

describe('GET /domains/project/:projectId and DELETE /domains/:id', () => {
  it("lists the key's project's domains, and 404s for another project's id", async () => {
    const { project } = await accountWithProject(stack.http);
    const { project: other } = await accountWithProject(stack.http);
    const a = await addDomain(project, 'list-a.example.com');
    const b = await addDomain(project, 'list-b.example.com');
    await addDomain(other, 'list-other.example.com');
    const res = await stack.http.get(`/domains/project/${project.id}`, { key: project.secretKey });
    expect(res.status).toBe(200);
    expect(res.body.map((d: any) => d.id)).toEqual([a.id, b.id]);
    expect(res.body[0]).toEqual(a);

    const foreign = await stack.http.get(`/domains/project/${other.id}`, { key: project.secretKey });
    expect(foreign.status).toBe(404);
    expect((await stack.http.get('/domains/project/not-a-uuid', { key: project.secretKey })).status).toBe(404);
  });

  it('deletes a domain (204); it is gone afterwards, and another project cannot delete it', async () => {
    const { project } = await accountWithProject(stack.http);
    const { project: other } = await accountWithProject(stack.http);
    const domain = await addDomain(project, 'gone.example.com');
    const foreign = await stack.http.delete(`/domains/${domain.id}`, { key: other.secretKey });
    expect(foreign.status).toBe(404);
    expect(foreign.body.error).toMatchObject({ code: 'DOMAIN_NOT_FOUND', details: { resource: 'domain', id: domain.id } });

    const res = await stack.http.delete(`/domains/${domain.id}`, { key: project.secretKey });
    expect(res.status).toBe(204);
    expect(res.text).toBe('');
    expect((await stack.http.delete(`/domains/${domain.id}`, { key: project.secretKey })).status).toBe(404);
    expect((await verify(project, domain.id)).status).toBe(404);
    expect((await stack.http.get(`/domains/project/${project.id}`, { key: project.secretKey })).body).toEqual([]);
    // The name is free again, with a new key.
    const again = await addDomain(project, 'gone.example.com');
    expect(recordOf(again, 'DKIM').value).not.toBe(recordOf(domain, 'DKIM').value);
  });
});

describe('GET /domains/:id/verify', () => {
  it('stays PENDING before the record exists, turns VERIFIED once it does, and stops being verified when it goes', async () => {
    const { project, account } = await accountWithProject(stack.http);
    const domain = await addDomain(project, 'verify.example.com');
    const setupState = async () => (await stack.http.get(`/projects/${project.id}/setup-state`, { cookie: account.cookie })).body.steps.domainVerified;
    expect(await setupState()).toBe(false);

    const before = await verify(project, domain.id);
    expect(before.status).toBe(200);
    expect(before.body).toMatchObject({ status: 'PENDING', verified: false, verifiedAt: null });
    expect(before.body.lastCheckedAt).not.toBeNull();
    expect(before.body.records.map((r: any) => r.verified)).toEqual([false, false, false]);

    publishDkim(domain);
    const after = await verify(project, domain.id);
    expect(after.body).toMatchObject({ status: 'VERIFIED', verified: true });
    expect(after.body.verifiedAt).not.toBeNull();
    expect(after.body.records.map((r: any) => [r.purpose, r.verified])).toEqual([
      ['DKIM', true],
      ['SPF', false],
      ['DMARC', false],
    ]);
    const listed = await stack.http.get(`/domains/project/${project.id}`, { key: project.secretKey });
    expect(listed.body[0].verified).toBe(true);
    expect(await setupState()).toBe(true);

    // Verifying again keeps the moment it first became verified.
    const again = await verify(project, domain.id);
    expect(again.body.verifiedAt).toBe(after.body.verifiedAt);

    dns.remove(recordOf(domain, 'DKIM').name);
    const lost = await verify(project, domain.id);
    expect(lost.body).toMatchObject({ status: 'FAILED', verified: false, verifiedAt: null });
    expect(recordOf(lost.body, 'DKIM').verified).toBe(false);
    expect(await setupState()).toBe(false);

    // Back again: verified again.
    publishDkim(domain);
    expect((await verify(project, domain.id)).body.status).toBe('VERIFIED');
  });

  it('accepts the record split into strings, with whitespace inside p= and without v= and k=', async () => {
    const { project } = await accountWithProject(stack.http);
    const domain = await addDomain(project, 'split.example.com');
    const p = /p=(\S+)$/.exec(recordOf(domain, 'DKIM').value)![1];
    dns.setTxt(recordOf(domain, 'DKIM').name, [`p=${p.slice(0, 100)} ${p.slice(100, 250)}\t${p.slice(250)}`]);
    expect((await verify(project, domain.id)).body.status).toBe('VERIFIED');
  });

  it('marks a DKIM record carrying another key FAILED', async () => {
    const { project } = await accountWithProject(stack.http);
    const domain = await addDomain(project, 'wrongkey.example.com');
    const other = await addDomain(project, 'otherkey.example.com');
    dns.setTxt(recordOf(domain, 'DKIM').name, [recordOf(other, 'DKIM').value]);
    const res = await verify(project, domain.id);
    expect(res.body).toMatchObject({ status: 'FAILED', verified: false });
  });

  it('reports SPF and DMARC when they are published, without making them a condition', async () => {
    const { project } = await accountWithProject(stack.http);
    const domain = await addDomain(project, 'spf.example.com');
    dns.setTxt('spf.example.com', ['google-site-verification=abc', `v=spf1 include:${SPF_INCLUDE} ~all`]);
    dns.setTxt('_dmarc.spf.example.com', ['v=DMARC1; p=reject; rua=mailto:d@spf.example.com']);
    const res = await verify(project, domain.id);
    expect(res.body.status).toBe('PENDING');
    expect(res.body.records.map((r: any) => [r.purpose, r.verified])).toEqual([
      ['DKIM', false],
      ['SPF', true],
      ['DMARC', true],
    ]);

    // An SPF record without the relay's include does not count, nor do two SPF records.
    dns.setTxt('spf.example.com', ['v=spf1 mx -all']);
    expect(recordOf((await verify(project, domain.id)).body, 'SPF').verified).toBe(false);
    dns.setTxt('spf.example.com', [`v=spf1 include:${SPF_INCLUDE} ~all`, 'v=spf1 mx -all']);
    expect(recordOf((await verify(project, domain.id)).body, 'SPF').verified).toBe(false);
  });

  it('changes nothing when the DNS server fails (SERVFAIL) or does not answer (timeout): no 500', async () => {
    const { project } = await accountWithProject(stack.http);
    const domain = await addDomain(project, 'flaky.example.com');
    publishDkim(domain);
    const verified = (await verify(project, domain.id)).body;
    expect(verified.status).toBe('VERIFIED');
    dns.remove(recordOf(domain, 'DKIM').name);

    for (const mode of ['SERVFAIL', 'SILENCE'] as const) {
      dns.failWith(mode);
      const res = await verify(project, domain.id);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ status: 'VERIFIED', verified: true, lastCheckedAt: verified.lastCheckedAt, verifiedAt: verified.verifiedAt });
      // Said, not hidden: the answer is the record as it was, because DNS could not be asked.
      expect(res.body.check).toEqual({ status: 'DNS_UNAVAILABLE', message: expect.stringMatching(/failed temporarily.*status is unchanged/) });
    }
    expect(stack.logs.some((l) => l.msg === 'domain check: DNS lookup failed temporarily')).toBe(true);
    dns.failWith(null);
    expect((await verify(project, domain.id)).body).toMatchObject({ status: 'FAILED', check: { status: 'CHECKED', message: null } });
  });

  it('keeps a VERIFIED domain VERIFIED when its DNS servers cannot be reached: stopped, or no route to them', async () => {
    const { project } = await accountWithProject(stack.http);
    const added = await addDomain(project, 'outage.example.com');
    const own = await startTestDnsServer();
    let stopped = false;
    try {
      const dkim = recordOf(added, 'DKIM');
      own.setTxt(dkim.name, [dkim.value]);
      const through = (servers: string[]) => createDnsResolver({ servers, timeoutMs: 300, tries: 1 });
      const row = async () => (await domainRepository.findById(stack.orm.em.fork(), project.id, added.id))!;
      const checked = await checkDomain(stack.orm.em.fork(), through([own.address]), await row(), { spfInclude: SPF_INCLUDE });
      expect(checked).toMatchObject({ kind: 'checked', domain: { status: 'VERIFIED' } });
      const before = await row();

      await own.close();
      stopped = true;
      // A stopped server (a closed port), and an address with no route to it: c-ares answers the
      // latter with ENOTFOUND, its code for NXDOMAIN, which must not read as "the record is gone".
      for (const servers of [[own.address], ['0.0.0.1']]) {
        const outcome = await checkDomain(stack.orm.em.fork(), through(servers), await row(), { spfInclude: SPF_INCLUDE });
        expect(outcome).toMatchObject({ kind: 'temporaryFailure' });
        const summary = await recheckDomains(() => stack.orm.em.fork(), through(servers), { spfInclude: SPF_INCLUDE, pageSize: 500 });
        expect(summary.checked).toBe(0);
        expect(await row()).toMatchObject({ status: 'VERIFIED', dkimVerified: true, lastCheckedAt: before.lastCheckedAt });
      }
    } finally {
      if (!stopped) await own.close();
    }
  });

  it("404s for an unknown id, a malformed id and another project's domain", async () => {
    const { project } = await accountWithProject(stack.http);
    const { project: other } = await accountWithProject(stack.http);
    const domain = await addDomain(other, 'theirs.example.com');
    for (const id of [crypto.randomUUID(), 'nope', domain.id]) {
      const res = await verify(project, id);
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('DOMAIN_NOT_FOUND');
    }
  });
});

describe('the background re-check', () => {
  it('is a Temporal schedule every 5 minutes whose run verifies pending domains and un-verifies lost ones', async () => {
    const { project } = await accountWithProject(stack.http);
    const pending = await addDomain(project, 'bg-pending.example.com');
    const losing = await addDomain(project, 'bg-losing.example.com');
    publishDkim(losing);
    expect((await verify(project, losing.id)).body.status).toBe('VERIFIED');
    dns.remove(recordOf(losing, 'DKIM').name);
    publishDkim(pending);

    const schedule = stack.temporal.schedule.getHandle(domainRecheckScheduleId(stack.config.temporalTaskQueue));
    const described = await schedule.describe();
    expect(described.spec.intervals).toEqual([expect.objectContaining({ every: 5 * 60 * 1000 })]);
    await schedule.trigger();
    await eventually(async () => {
      const list = (await stack.http.get(`/domains/project/${project.id}`, { key: project.secretKey })).body;
      const byId = Object.fromEntries(list.map((d: any) => [d.id, d]));
      expect(byId[pending.id]).toMatchObject({ status: 'VERIFIED', verified: true });
      expect(byId[losing.id]).toMatchObject({ status: 'FAILED', verified: false });
    });
  });

  it('pages through every due domain with bounded concurrency, and leaves domains alone when DNS fails', async () => {
    const { project } = await accountWithProject(stack.http);
    const domains = [];
    for (let i = 0; i < 7; i++) domains.push(await addDomain(project, `page${i}.example.com`));
    for (const d of domains.slice(0, 4)) publishDkim(d);
    const resolver = dnsResolverFromConfig(stack.config);
    const pageEnds = new Set<string>();
    const summary = await recheckDomains(() => stack.orm.em.fork(), resolver, {
      spfInclude: SPF_INCLUDE,
      pageSize: 3,
      concurrency: 2,
      onProgress: (s) => s.lastId && pageEnds.add(s.lastId),
    });
    // Other tests' domains are due too; these seven are among them.
    expect(summary.checked).toBeGreaterThanOrEqual(7);
    expect(pageEnds.size).toBeGreaterThanOrEqual(3);
    const list = (await stack.http.get(`/domains/project/${project.id}`, { key: project.secretKey })).body;
    expect(list.map((d: any) => d.status)).toEqual(['VERIFIED', 'VERIFIED', 'VERIFIED', 'VERIFIED', 'PENDING', 'PENDING', 'PENDING']);

    for (const d of domains) dns.remove(recordOf(d, 'DKIM').name);
    dns.failWith('SERVFAIL');
    const failing = await recheckDomains(() => stack.orm.em.fork(), resolver, { spfInclude: SPF_INCLUDE, pageSize: 50 });
    expect(failing.checked).toBe(0);
    expect(failing.temporaryFailures).toBeGreaterThanOrEqual(7);
    const unchanged = (await stack.http.get(`/domains/project/${project.id}`, { key: project.secretKey })).body;
    expect(unchanged.map((d: any) => d.status)).toEqual(list.map((d: any) => d.status));
    expect(unchanged.map((d: any) => d.lastCheckedAt)).toEqual(list.map((d: any) => d.lastCheckedAt));
  });

  it('re-checks FAILED domains hourly rather than every 5 minutes', async () => {
    const { project } = await accountWithProject(stack.http);
    const domain = await addDomain(project, 'hourly.example.com');
    const other = await addDomain(project, 'hourly-other.example.com');
    dns.setTxt(recordOf(domain, 'DKIM').name, [recordOf(other, 'DKIM').value]);
    expect((await verify(project, domain.id)).body.status).toBe('FAILED');
    const due = async () => (await domainRepository.dueForRecheck(stack.orm.em.fork(), null, 100_000)).some((d) => d.id === domain.id);
    expect(await due()).toBe(false);
    await stack.orm.em.fork().execute(`update domains set last_checked_at = now() - interval '61 minutes' where id = ?`, [domain.id]);
    expect(await due()).toBe(true);
    // Resuming after the last id handled skips what came before.
    expect((await domainRepository.dueForRecheck(stack.orm.em.fork(), domain.id, 100_000)).some((d) => d.id === domain.id)).toBe(false);
  });

  it('turns a domain PENDING for more than 72 hours FAILED', async () => {
    const { project } = await accountWithProject(stack.http);
    const domain = await addDomain(project, 'late.example.com');
    await stack.orm.em.fork().execute(`update domains set created_at = now() - interval '73 hours' where id = ?`, [domain.id]);
    expect((await verify(project, domain.id)).body.status).toBe('FAILED');
    publishDkim(domain);
    expect((await verify(project, domain.id)).body.status).toBe('VERIFIED');
  });
});

describe('the sender-domain rule and DKIM signing', () => {
  it('finds the verified domain of the from address or of a parent, case-insensitively, in this project only', async () => {
    const { project } = await accountWithProject(stack.http);
    const { project: other } = await accountWithProject(stack.http);
    const parent = await addDomain(project, 'sender.example.com');
    const child = await addDomain(project, 'eu.sender.example.com');
    const unverified = await addDomain(project, 'unverified.example.com');
    publishDkim(parent);
    expect((await verify(project, parent.id)).body.status).toBe('VERIFIED');
    const em = () => stack.orm.em.fork();

    const find = async (address: string, projectId = project.id) => (await domainRepository.findVerifiedSenderDomain(em(), projectId, address))?.domain ?? null;
    expect(await find('hello@sender.example.com')).toBe('sender.example.com');
    expect(await find('Hello@News.Sender.EXAMPLE.com')).toBe('sender.example.com');
    expect(await find('a@deep.eu.sender.example.com')).toBe('sender.example.com');
    expect(await find('a@unverified.example.com')).toBeNull();
    expect(await find('a@example.com')).toBeNull();
    expect(await find('a@notsender.example.com')).toBeNull();
    expect(await find('not an address')).toBeNull();
    expect(await find('hello@sender.example.com', other.id)).toBeNull();

    // The closest verified domain wins, so its key signs.
    publishDkim(child);
    await verify(project, child.id);
    expect(await find('a@deep.eu.sender.example.com')).toBe('eu.sender.example.com');
    expect(unverified.status).toBe('PENDING');
  });

  it("signs mail with the domain's key so that the signature verifies against the published record", async () => {
    const { project } = await accountWithProject(stack.http);
    const domain = await addDomain(project, 'signed.example.com');
    publishDkim(domain);
    await verify(project, domain.id);
    const row = await domainRepository.findVerifiedSenderDomain(stack.orm.em.fork(), project.id, 'news@signed.example.com');
    const dkim = domainRepository.dkimSigningKey(stack.config.secret, row!);
    expect(dkim).toMatchObject({ domainName: 'signed.example.com', keySelector: recordOf(domain, 'DKIM').name.split('.')[0] });

    const transport = nodemailer.createTransport({ streamTransport: true, buffer: true, dkim });
    const info = await transport.sendMail({ from: 'news@signed.example.com', to: 'reader@example.org', subject: 'Signed', text: 'Hello' });
    const message = info.message as Buffer;
    expect(message.toString()).toContain(`DKIM-Signature: v=1; a=rsa-sha256; c=relaxed/relaxed; d=signed.example.com;`);

    // mailauth looks the public key up through our resolver, i.e. the test DNS server.
    const resolver = dnsResolverFromConfig(stack.config);
    const result = await dkimVerify(message, {
      resolver: async (name: string, rrtype: string) => {
        if (rrtype !== 'TXT') throw Object.assign(new Error('unexpected lookup'), { code: 'ENOTFOUND' });
        const txt = await resolver.txt(name);
        if (!txt.length) throw Object.assign(new Error('no record'), { code: 'ENOTFOUND' });
        return txt.map((t) => [t]);
      },
    });
    expect(result.results).toEqual([expect.objectContaining({ signingDomain: 'signed.example.com', status: expect.objectContaining({ result: 'pass' }) })]);
  });

  it('will not open a sealed key with another SECRET or on another row', async () => {
    const { project } = await accountWithProject(stack.http);
    const a = await addDomain(project, 'seal-a.example.com');
    const b = await addDomain(project, 'seal-b.example.com');
    const em = stack.orm.em.fork();
    const rowA = (await domainRepository.findById(em, project.id, a.id))!;
    const rowB = (await domainRepository.findById(em, project.id, b.id))!;
    expect(() => domainRepository.dkimSigningKey('another-secret-of-enough-length', rowA)).toThrow();
    expect(() => domainRepository.dkimSigningKey(stack.config.secret, { ...rowB, dkimPrivateKeySealed: rowA.dkimPrivateKeySealed })).toThrow();
  });
});

describe('the DNS resolver', () => {
  it('answers TXT (joined), MX (by priority), and empty for names without records', async () => {
    const resolver = createDnsResolver({ servers: [dns.address], timeoutMs: 300 });
    dns.setTxt('r.example.com', ['x'.repeat(600)]);
    dns.setMx('r.example.com', [
      { exchange: 'mx2.example.com', priority: 20 },
      { exchange: 'mx1.example.com', priority: 10 },
    ]);
    expect(await resolver.txt('r.example.com')).toEqual(['x'.repeat(600)]);
    expect(await resolver.mx('r.example.com')).toEqual([
      { exchange: 'mx1.example.com', priority: 10 },
      { exchange: 'mx2.example.com', priority: 20 },
    ]);
    expect(await resolver.txt('nothing.example.com')).toEqual([]); // NXDOMAIN
    expect(await resolver.a('r.example.com')).toEqual([]); // NODATA
  });

  it('tells a temporary failure apart: SERVFAIL, timeout, nobody listening', async () => {
    const resolver = createDnsResolver({ servers: [dns.address], timeoutMs: 200, tries: 1 });
    dns.failWith('SERVFAIL');
    await expect(resolver.txt('r.example.com')).rejects.toMatchObject({ name: 'DnsTemporaryFailure', code: 'ESERVFAIL' });
    dns.failWith('SILENCE');
    await expect(resolver.mx('r.example.com')).rejects.toMatchObject({ code: 'ETIMEOUT' });
    dns.failWith(null);
    const closedPort = createDnsResolver({ servers: ['127.0.0.1:9'], timeoutMs: 200, tries: 1 });
    await expect(closedPort.txt('r.example.com')).rejects.toBeInstanceOf(DnsTemporaryFailure);
    // No route to the server: c-ares says ENOTFOUND, as for NXDOMAIN; the resolver finds out the server never answered.
    const noRoute = createDnsResolver({ servers: ['0.0.0.1'], timeoutMs: 200, tries: 1 });
    await expect(noRoute.txt('r.example.com')).rejects.toMatchObject({ name: 'DnsTemporaryFailure', code: 'EUNREACHABLE' });
    // NXDOMAIN from a server that answers stays an empty answer.
    expect(await resolver.txt('nothing-here.example.com')).toEqual([]);
  });

  it('reads DNS_SERVERS as ip, ip:port and [ipv6]:port, and refuses anything else at start', async () => {
    const { loadConfig } = await import('../../lib/config');
    const base = { SECRET: 'x'.repeat(32), DATA_DIR: stack.config.dataDir };
    expect(loadConfig({ ...base, DNS_SERVERS: '127.0.0.1:5353, 10.0.0.1, [::1]:5300, ::1' }).dnsServers).toEqual([
      '127.0.0.1:5353',
      '10.0.0.1',
      '[::1]:5300',
      '::1',
    ]);
    expect(loadConfig(base).dnsServers).toEqual([]);
    for (const bad of ['dns.example.com', '127.0.0.1:99999', '::1:53x', '1.2.3']) {
      expect(() => loadConfig({ ...base, DNS_SERVERS: bad })).toThrow(/DNS_SERVERS/);
    }
  });
});
