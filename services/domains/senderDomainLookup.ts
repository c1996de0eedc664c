import type { Orm } from '../../db/orm';
import { CoalescedLookup } from '../../lib/coalescedLookup';
import { domainRepository, type DomainRow } from '../../db/domains/domainRepository';

/**
 * The sender-domain rule on the send path: `domainRepository.findVerifiedSenderDomain`, with the
 * concurrent sends of one project from one domain sharing a statement (lib/coalescedLookup.ts).
 * No answer is kept after its statement, so a domain that stops being verified is refused at once.
 */
export class SenderDomainLookup {
  private readonly lookup: CoalescedLookup<DomainRow | null>;

  constructor(orm: Orm) {
    this.lookup = new CoalescedLookup((key) => {
      const [projectId, fromDomain] = key.split('\u0000');
      return domainRepository.findVerifiedSenderDomain(orm.em.fork(), projectId, `sender@${fromDomain}`);
    });
  }

  /** The verified domain covering `fromAddress` for the project, or null. */
  findVerified(projectId: string, fromAddress: string): Promise<DomainRow | null> {
    const at = fromAddress.lastIndexOf('@');
    if (at < 0) return Promise.resolve(null);
    return this.lookup.get(`${projectId}\u0000${fromAddress.slice(at + 1).toLowerCase()}`);
  }
}
