import type { Orm } from '../../db/orm';
import { domainRepository } from '../../db/domains/domainRepository';
import type { CapUsageLookup } from '../billing/capUsageLookup';
import { capRefusal } from '../billing/usageCaps';
import { parseDomainName } from '../../lib/domainName';

/** Recipients one message may have; RCPT past it is answered 452 (contract 20). */
export const MAX_INBOUND_RECIPIENTS = 50;
/** How long which projects verified a domain is remembered: RCPT must not cost a query each. */
const DOMAIN_TTL_MS = 5_000;

export type RecipientVerdict =
  { accepted: true; address: string; projectIds: string[]; returnPath: boolean } | { accepted: false; code: 550 | 452; message: string };

const refusedRelay = (what: string): RecipientVerdict => ({ accepted: false, code: 550, message: `5.7.1 ${what}: relaying denied` });

/**
 * Who receives mail at an address (contract 20): only a domain that is, letter case ignored, a
 * VERIFIED domain of some project, exactly (no parent, no look-alike), and with INBOUND_MX_HOST
 * set, the return-path subdomain of one. An address that is not a plain `local@domain` (a quoted
 * local part, an IP literal, a source route, a second `@`) is refused: Mailroom never relays, and
 * such forms exist to route mail elsewhere. One instance per API process serves the SMTP
 * listener's RCPT (`check`) and SES receipt notifications (`whoReceives`).
 */
export class InboundRecipients {
  private readonly domains = new Map<string, { projectIds: Promise<string[]>; until: number }>();

  constructor(
    private readonly orm: Orm,
    private readonly settings: { inboundMxHost: string | null; returnPathSubdomain: string },
    /** The API process's cap reader, shared with the send path (services/billing/capUsageLookup.ts). */
    private readonly caps: CapUsageLookup,
  ) {}

  /**
   * RCPT TO: who receives, less the projects at their `inbound` cap; when every project is at
   * its cap, 452 4.2.2, so the sending server keeps the message and tries again later. The count
   * of a project with a cap is read after RCPT asked, never remembered: once the count committed
   * by processing (whichever API process took the message) reaches the cap, as GET billing-limits
   * then reports, every process refuses. Only "no cap" is remembered, for a second (CapUsageLookup).
   */
  async check(rawAddress: string): Promise<RecipientVerdict> {
    const verdict = await this.whoReceives(rawAddress);
    // Bounce reports are feedback, not mail: the `inbound` cap does not hold them back.
    if (!verdict.accepted || verdict.returnPath) return verdict;
    const full = await Promise.all(verdict.projectIds.map((projectId) => this.atCap(projectId)));
    const open = verdict.projectIds.filter((_, i) => !full[i]);
    if (!open.length)
      return { accepted: false, code: 452, message: '4.2.2 Mailbox full: the recipient project reached its monthly inbound cap; try again later' };
    return { ...verdict, projectIds: open };
  }

  /**
   * Who receives a message already taken (by SES, which cannot be asked to try again later):
   * every project receiving at the address, those at their `inbound` cap included; processing
   * records their copies without an event and says why (services/inbound/inboundProcessing.ts).
   */
  async whoReceives(rawAddress: string): Promise<RecipientVerdict> {
    const address = rawAddress.trim();
    if (/["\\\s:,;<>[\]()]/.test(address) || address.startsWith('@')) return refusedRelay(`<${address}>`);
    const at = address.lastIndexOf('@');
    if (at <= 0 || address.indexOf('@') !== at) return refusedRelay(`<${address}>`);
    const local = address.slice(0, at);
    const rawDomain = address.slice(at + 1);
    const parsed = parseDomainName(rawDomain);
    // A trailing dot or a non-ASCII form is normalised by parseDomainName; the address keeps what the client wrote.
    if ('error' in parsed || rawDomain.endsWith('.')) return refusedRelay(`<${address}>`);
    const domain = parsed.domain;
    const normalised = `${local}@${domain}`;

    let projectIds = await this.projectsOf(domain);
    let returnPath = false;
    const prefix = `${this.settings.returnPathSubdomain}.`;
    if (!projectIds.length && this.settings.inboundMxHost && domain.startsWith(prefix)) {
      projectIds = await this.projectsOf(domain.slice(prefix.length));
      returnPath = projectIds.length > 0;
    }
    if (!projectIds.length) return refusedRelay(`<${address}>`);
    return { accepted: true, address: normalised, projectIds, returnPath };
  }

  private projectsOf(domain: string): Promise<string[]> {
    const now = Date.now();
    const cached = this.domains.get(domain);
    if (cached && cached.until > now) return cached.projectIds;
    const projectIds = domainRepository.projectsVerifying(this.orm.em.fork(), domain);
    this.domains.set(domain, { projectIds, until: now + DOMAIN_TTL_MS });
    // A failed read is not remembered: the next RCPT asks again.
    projectIds.catch(() => this.domains.delete(domain));
    if (this.domains.size > 10_000) this.evictExpired(this.domains, now);
    return projectIds;
  }

  /** At its cap: one more message would pass it (the cap rule of services/billing/usageCaps.ts). */
  private async atCap(projectId: string): Promise<boolean> {
    return capRefusal('inbound', await this.caps.current(projectId, 'inbound'), 1) !== null;
  }

  private evictExpired(map: Map<string, { until: number }>, now: number): void {
    for (const [key, entry] of map) if (entry.until <= now) map.delete(key);
  }
}
