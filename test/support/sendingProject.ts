import crypto from 'node:crypto';
import { dkimVerify } from 'mailauth/lib/dkim/verify';
import type { TestStack } from './testStack';
import type { TestDnsServer } from './dnsServer';
import { accountWithProject, type TestProject } from './accounts';
import { dnsResolverFromConfig } from '../../lib/dns/dnsResolver';

/**
 * A project that may send: a domain added through the API, its DKIM record published on the
 * test DNS server exactly as the API asked, and verified through GET /domains/:id/verify.
 */
export async function projectWithVerifiedDomain(
  stack: Pick<TestStack, 'http'>,
  dns: TestDnsServer,
  domain = `mail-${crypto.randomBytes(4).toString('hex')}.example.com`,
) {
  const { account, project } = await accountWithProject(stack.http);
  await verifyDomain(stack, dns, project, domain);
  return { account, project, domain };
}

export async function verifyDomain(stack: Pick<TestStack, 'http'>, dns: TestDnsServer, project: TestProject, domain: string) {
  const added = await stack.http.post('/domains', { domain }, { key: project.secretKey });
  if (added.status !== 201) throw new Error(`POST /domains answered ${added.status}`);
  const dkim = added.body.records.find((r: { purpose: string }) => r.purpose === 'DKIM');
  dns.setTxt(dkim.name, [dkim.value]);
  const verified = await stack.http.get(`/domains/${added.body.id}/verify`, { key: project.secretKey });
  if (verified.body.status !== 'VERIFIED') throw new Error(`domain ${domain} did not verify: ${JSON.stringify(verified.body)}`);
  return verified.body;
}

/** DKIM results for a raw message, with the public key looked up on the test DNS server. */
export async function dkimResults(stack: TestStack, raw: string | Buffer) {
  const resolver = dnsResolverFromConfig(stack.config);
  const result = await dkimVerify(Buffer.isBuffer(raw) ? raw : Buffer.from(raw), {
    resolver: async (name: string, rrtype: string) => {
      if (rrtype !== 'TXT') throw Object.assign(new Error('unexpected lookup'), { code: 'ENOTFOUND' });
      const txt = await resolver.txt(name);
      if (!txt.length) throw Object.assign(new Error('no record'), { code: 'ENOTFOUND' });
      return txt.map((t) => [t]);
    },
  });
  return result.results as Array<{ signingDomain: string; status: { result: string } }>;
}
