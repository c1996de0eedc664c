import { DnsTemporaryFailure, type DnsResolver } from '../dns/dnsResolver';

/**
 * What DNS says about the domain of an address, for /v1/verify. All four questions (NS, MX, A,
 * AAAA) go out at once through the project's resolver (DNS_SERVERS, DNS_TIMEOUT_MS).
 *
 * - Nameservers: an address's domain is often not a zone of its own (mail.example.com inside
 *   example.com's zone). A name with records of its own exists in its zone, so when the name has
 *   no NS but has MX, A or AAAA records, the nameservers of the nearest parent (down to two
 *   labels) are the domain's. A name without any record is not walked up: a missing
 *   nope.example.co.uk must not borrow co.uk's nameservers.
 * - MX: a null MX (RFC 7505, exchange ".") means the domain accepts no mail, so it counts as no
 *   MX. No implicit MX from an A record: the specification asks for MX records.
 * - A lookup that fails (timeout, SERVFAIL, unreachable server) says nothing about the domain;
 *   the answer then reports that record as missing and names the failure in `failures`, so the
 *   caller is never left with a 500 and never told an unchecked domain is fine.
 */
export interface MailDomainDns {
  domainExists: boolean;
  hasMxRecords: boolean;
  /** The domain publishes a null MX: it says it receives no mail. */
  nullMx: boolean;
  hasWebsite: boolean;
  /** Lookups that could not be answered, as `{ what, code }` (what: 'nameservers', 'MX records', 'A/AAAA records'). */
  failures: Array<{ what: string; code: string }>;
}

type Outcome<T> = { records: T[] } | { failed: string };

async function settle<T>(lookup: Promise<T[]>): Promise<Outcome<T>> {
  try {
    return { records: await lookup };
  } catch (err) {
    if (err instanceof DnsTemporaryFailure) return { failed: err.code };
    throw err;
  }
}

const records = <T>(outcome: Outcome<T>): T[] => ('records' in outcome ? outcome.records : []);

export async function lookUpMailDomain(dns: DnsResolver, domain: string): Promise<MailDomainDns> {
  const [ns, mx, a, aaaa] = await Promise.all([settle(dns.ns(domain)), settle(dns.mx(domain)), settle(dns.a(domain)), settle(dns.aaaa(domain))]);
  const failures: MailDomainDns['failures'] = [];

  const exchanges = records(mx);
  const nullMx = exchanges.some((record) => record.exchange === '' || record.exchange === '.');
  const hasMxRecords = exchanges.length > 0 && !nullMx;
  const hasWebsite = records(a).length > 0 || records(aaaa).length > 0;

  let nsOutcome = ns;
  if ('records' in ns && ns.records.length === 0 && (exchanges.length > 0 || hasWebsite)) {
    nsOutcome = await parentNameservers(dns, domain);
  }
  const domainExists = records(nsOutcome).length > 0;

  if ('failed' in nsOutcome) failures.push({ what: 'nameservers', code: nsOutcome.failed });
  if ('failed' in mx) failures.push({ what: 'MX records', code: mx.failed });
  const addressFailure = 'failed' in a ? a.failed : 'failed' in aaaa ? aaaa.failed : undefined;
  if (!hasWebsite && addressFailure) failures.push({ what: 'A/AAAA records', code: addressFailure });

  return { domainExists, hasMxRecords, nullMx, hasWebsite, failures };
}

/** The NS records of the nearest parent that has some, down to two labels. */
async function parentNameservers(dns: DnsResolver, domain: string): Promise<Outcome<string>> {
  const labels = domain.split('.');
  for (let i = 1; i <= labels.length - 2; i++) {
    const outcome = await settle(dns.ns(labels.slice(i).join('.')));
    if ('failed' in outcome || outcome.records.length > 0) return outcome;
  }
  return { records: [] };
}
