import type { EntityManager } from '@mikro-orm/postgresql';
import { DnsTemporaryFailure, type DnsResolver } from '../../lib/dns/dnsResolver';
import { domainRepository, type DomainRow, type DomainStatus } from '../../db/domains/domainRepository';

/**
 * Everything about a sender domain's DNS records, in one place: the records we ask the owner to
 * add, how a found record is judged, and how a check moves the domain's status.
 *
 * Status rules:
 * - VERIFIED when the DKIM TXT at `<selector>._domainkey.<domain>` carries our public key.
 * - PENDING while no DKIM record is found, for up to PENDING_GRACE_HOURS after the domain was added.
 * - FAILED when a DKIM record is there with another key (or revoked, `p=`), when none has appeared
 *   within the grace period, or when a VERIFIED domain's record is gone or changed: it stops
 *   being verified at once (mail from it is refused) and verifies again as soon as the record is back.
 * - A lookup that fails temporarily (SERVFAIL, timeout, unreachable server) changes nothing, not
 *   even lastCheckedAt, which is the time of the last check that got an answer.
 *
 * SPF and DMARC are advice: their flags are reported on the records but never decide the status.
 */
export const PENDING_GRACE_HOURS = 72;

export type DnsRecordPurpose = 'DKIM' | 'SPF' | 'DMARC' | 'INBOUND' | 'RETURN_PATH';

export interface DomainDnsRecord {
  type: 'TXT' | 'MX';
  name: string;
  value: string;
  purpose: DnsRecordPurpose;
  verified: boolean;
}

export const dkimRecordName = (domain: Pick<DomainRow, 'domain' | 'dkimSelector'>) => `${domain.dkimSelector}._domainkey.${domain.domain}`;
export const dkimRecordValue = (publicKey: string) => `v=DKIM1; k=rsa; p=${publicKey}`;
export const dmarcRecordName = (domain: string) => `_dmarc.${domain}`;
export const DMARC_RECORD_VALUE = 'v=DMARC1; p=none;';

/**
 * Mailroom runs no MTA of its own: mail leaves through the SMTP relay of SMTP_URL. With
 * SPF_INCLUDE naming the relay's SPF domain (amazonses.com, _spf.google.com, ...) the suggested
 * record includes it; without it we suggest `a mx`, right when the domain's own servers relay.
 */
export function spfRecordValue(spfInclude: string | undefined): string {
  return spfInclude ? `v=spf1 include:${spfInclude} ~all` : 'v=spf1 a mx ~all';
}

/** What the records depend on besides the domain: SPF_INCLUDE, INBOUND_MX_HOST, RETURN_PATH_SUBDOMAIN. */
export interface DomainRecordSettings {
  spfInclude: string | undefined;
  inboundMxHost: string | null;
  returnPathSubdomain: string;
}

/**
 * The records the owner must add, with what the last check found for each. With INBOUND_MX_HOST
 * set, the mail-in records follow (contract 20): the domain's own MX, pointing its mail at
 * Mailroom, and the return-path subdomain's MX and SPF, where bounces come back. Those are
 * suggestions the checks do not look up: `verified` stays false for them and they never decide
 * the domain's status (mail can leave without them; only bounces by mail need them).
 */
export function domainDnsRecords(domain: DomainRow, settings: DomainRecordSettings): DomainDnsRecord[] {
  const records: DomainDnsRecord[] = [
    { type: 'TXT', name: dkimRecordName(domain), value: dkimRecordValue(domain.dkimPublicKey), purpose: 'DKIM', verified: domain.dkimVerified },
    { type: 'TXT', name: domain.domain, value: spfRecordValue(settings.spfInclude), purpose: 'SPF', verified: domain.spfVerified },
    { type: 'TXT', name: dmarcRecordName(domain.domain), value: DMARC_RECORD_VALUE, purpose: 'DMARC', verified: domain.dmarcVerified },
  ];
  if (settings.inboundMxHost) {
    const mx = `10 ${settings.inboundMxHost}`;
    const returnPath = `${settings.returnPathSubdomain}.${domain.domain}`;
    records.push(
      { type: 'MX', name: domain.domain, value: mx, purpose: 'INBOUND', verified: false },
      { type: 'MX', name: returnPath, value: mx, purpose: 'RETURN_PATH', verified: false },
      { type: 'TXT', name: returnPath, value: spfRecordValue(settings.spfInclude), purpose: 'RETURN_PATH', verified: false },
    );
  }
  return records;
}

/** The domain record of contract section 8. */
export function serializeDomain(domain: DomainRow, settings: DomainRecordSettings) {
  return {
    id: domain.id,
    domain: domain.domain,
    status: domain.status,
    verified: domain.status === 'VERIFIED',
    records: domainDnsRecords(domain, settings),
    lastCheckedAt: domain.lastCheckedAt,
    verifiedAt: domain.verifiedAt,
    projectId: domain.projectId,
    createdAt: domain.createdAt,
    updatedAt: domain.updatedAt,
  };
}

/** RFC 6376 tag list (`v=DKIM1; k=rsa; p=...`): tag names lower-cased, whitespace around values dropped. */
function parseTagList(record: string): Map<string, string> {
  const tags = new Map<string, string>();
  for (const part of record.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    const name = part.slice(0, eq).trim().toLowerCase();
    if (name && !tags.has(name)) tags.set(name, part.slice(eq + 1).trim());
  }
  return tags;
}

export type DkimFinding = 'MATCH' | 'MISMATCH' | 'ABSENT';

/** A DKIM record matches when it is DKIM1 (if it says), RSA (the default) and `p=` is our key, whitespace aside. */
export function judgeDkimRecords(records: string[], publicKey: string): DkimFinding {
  const dkimRecords = records.map(parseTagList).filter((tags) => tags.has('p') || tags.get('v')?.toUpperCase() === 'DKIM1');
  if (!dkimRecords.length) return 'ABSENT';
  const matches = dkimRecords.some(
    (tags) =>
      (tags.get('v') ?? 'DKIM1').toUpperCase() === 'DKIM1' &&
      (tags.get('k') ?? 'rsa').toLowerCase() === 'rsa' &&
      (tags.get('p') ?? '').replace(/\s+/g, '') === publicKey,
  );
  return matches ? 'MATCH' : 'MISMATCH';
}

/**
 * SPF counts when the domain has exactly one `v=spf1` record (two are a permanent SPF error)
 * and, with SPF_INCLUDE set, that record includes it.
 */
export function judgeSpfRecords(records: string[], spfInclude: string | undefined): boolean {
  const spf = records.filter((r) => /^v=spf1(\s|$)/i.test(r.trim()));
  if (spf.length !== 1) return false;
  if (!spfInclude) return true;
  return spf[0]
    .trim()
    .toLowerCase()
    .split(/\s+/)
    .some((term) => term.replace(/^[+]/, '') === `include:${spfInclude}`);
}

export function judgeDmarcRecords(records: string[]): boolean {
  return records.filter((r) => /^v\s*=\s*DMARC1\s*(;|$)/i.test(r.trim())).length === 1;
}

/** The status a domain moves to after a check that found `dkim`. */
export function nextStatus(domain: Pick<DomainRow, 'status' | 'createdAt'>, dkim: DkimFinding, now: Date): DomainStatus {
  if (dkim === 'MATCH') return 'VERIFIED';
  if (dkim === 'MISMATCH' || domain.status !== 'PENDING') return 'FAILED';
  const pendingFor = now.getTime() - domain.createdAt.getTime();
  return pendingFor > PENDING_GRACE_HOURS * 3600_000 ? 'FAILED' : 'PENDING';
}

export type DomainCheckOutcome =
  { kind: 'checked'; domain: DomainRow } | { kind: 'temporaryFailure'; domain: DomainRow; error: DnsTemporaryFailure } | { kind: 'deleted' };

/**
 * Looks the domain's records up now and stores what was found. The DKIM lookup decides; an SPF
 * or DMARC lookup that fails temporarily keeps that flag as it was.
 */
export async function checkDomain(
  em: EntityManager,
  resolver: DnsResolver,
  domain: DomainRow,
  options: { spfInclude: string | undefined; now?: () => Date },
): Promise<DomainCheckOutcome> {
  const [dkim, spf, dmarc] = await Promise.allSettled([
    resolver.txt(dkimRecordName(domain)),
    resolver.txt(domain.domain),
    resolver.txt(dmarcRecordName(domain.domain)),
  ]);
  if (dkim.status === 'rejected') {
    if (dkim.reason instanceof DnsTemporaryFailure) return { kind: 'temporaryFailure', domain, error: dkim.reason };
    throw dkim.reason;
  }
  const kept = <T>(settled: PromiseSettledResult<T>, judge: (value: T) => boolean, previous: boolean) => {
    if (settled.status === 'fulfilled') return judge(settled.value);
    if (settled.reason instanceof DnsTemporaryFailure) return previous;
    throw settled.reason;
  };
  const now = options.now?.() ?? new Date();
  const finding = judgeDkimRecords(dkim.value, domain.dkimPublicKey);
  const updated = await domainRepository.recordCheck(em, domain.id, {
    status: nextStatus(domain, finding, now),
    dkimVerified: finding === 'MATCH',
    spfVerified: kept(spf, (records) => judgeSpfRecords(records, options.spfInclude), domain.spfVerified),
    dmarcVerified: kept(dmarc, judgeDmarcRecords, domain.dmarcVerified),
    checkedAt: now,
  });
  return updated ? { kind: 'checked', domain: updated } : { kind: 'deleted' };
}

export interface RecheckSummary {
  checked: number;
  verified: number;
  failed: number;
  pending: number;
  temporaryFailures: number;
  /** The last domain id handled: where a retried run resumes. */
  lastId: string | null;
}

/**
 * The background check: every domain due (see domainRepository.dueForRecheck), page by page in
 * id order, with at most `concurrency` domains being looked up at once. `onProgress` is called
 * after each domain and each page with the summary so far; `lastId` moves only when a whole page
 * is done, so a run resumed from it skips nothing (the activity heartbeats with it).
 */
export async function recheckDomains(
  openEm: () => EntityManager,
  resolver: DnsResolver,
  options: {
    spfInclude: string | undefined;
    pageSize?: number;
    concurrency?: number;
    startAfter?: string | null;
    onProgress?: (summary: RecheckSummary) => void;
  },
): Promise<RecheckSummary> {
  const pageSize = options.pageSize ?? 100;
  const concurrency = options.concurrency ?? 10;
  const summary: RecheckSummary = { checked: 0, verified: 0, failed: 0, pending: 0, temporaryFailures: 0, lastId: options.startAfter ?? null };
  for (;;) {
    const page = await domainRepository.dueForRecheck(openEm(), summary.lastId, pageSize);
    if (!page.length) return summary;
    let next = 0;
    const lane = async () => {
      for (let i = next++; i < page.length; i = next++) {
        const outcome = await checkDomain(openEm(), resolver, page[i], { spfInclude: options.spfInclude });
        if (outcome.kind === 'temporaryFailure') summary.temporaryFailures++;
        if (outcome.kind === 'checked') {
          summary.checked++;
          if (outcome.domain.status === 'VERIFIED') summary.verified++;
          else if (outcome.domain.status === 'FAILED') summary.failed++;
          else summary.pending++;
        }
        options.onProgress?.({ ...summary });
      }
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, page.length) }, lane));
    summary.lastId = page[page.length - 1].id;
    options.onProgress?.({ ...summary });
    if (page.length < pageSize) return summary;
  }
}
