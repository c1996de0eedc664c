import type { Orm } from '../../db/orm';
import { CoalescedLookup } from '../../lib/coalescedLookup';
import { usageCaps, type CategoryUsage, type UsageCategory } from './usageCaps';

/**
 * How long an answer that a project has no cap in a category is taken as still true. Most projects
 * have none, and the send path and the inbound listener's RCPT ask for every send and every
 * recipient: a round trip saved on each.
 */
const NO_CAP_REMEMBERED_MS = 1_000;

/**
 * A category's cap and this month's count, as the send path reads them to refuse a send the cap
 * clearly cannot take before anything is written, and as the inbound listener's RCPT reads them
 * to answer 452 4.2.2 to a project at its `inbound` cap (services/inbound/inboundRecipients.ts).
 * One instance per API process.
 *
 * A project with a cap is read at every call: concurrent calls for one project and category
 * share one statement (lib/coalescedLookup.ts), and each answer was read after the call was made,
 * so a count another process committed before it is always seen. Only an answer of "no cap" is
 * remembered, for NO_CAP_REMEMBERED_MS; a cap set through this process ends that at once
 * (`forget`), one set through another process within that second is not yet seen here: a send
 * is then still held by the reservation in its recording transaction (402, nothing sent; only the
 * contacts of the refused send may already have been written), and a message RCPT lets in is
 * recorded without an event by processing (services/inbound/inboundProcessing.ts).
 */
export class CapUsageLookup {
  private readonly lookup: CoalescedLookup<CategoryUsage>;
  private readonly noCapUntil = new Map<string, number>();
  /** Counts forget() per project, so an answer read before a cap was set is not remembered after it. */
  private readonly capsSet = new Map<string, number>();

  constructor(orm: Orm) {
    this.lookup = new CoalescedLookup((key) => {
      const [projectId, category] = key.split('\u0000');
      return usageCaps.current(orm.em.fork(), projectId, category as UsageCategory);
    });
  }

  async current(projectId: string, category: UsageCategory): Promise<CategoryUsage> {
    const key = `${projectId}\u0000${category}`;
    const until = this.noCapUntil.get(key);
    if (until !== undefined && until > Date.now()) return { limit: null, usage: 0 };
    const capsSetBefore = this.capsSet.get(projectId) ?? 0;
    const answer = await this.lookup.get(key);
    if (answer.limit !== null || (this.capsSet.get(projectId) ?? 0) !== capsSetBefore) this.noCapUntil.delete(key);
    else this.noCapUntil.set(key, Date.now() + NO_CAP_REMEMBERED_MS);
    return answer;
  }

  /** A cap of the project was just set here: the next send reads it, even one whose read was already under way. */
  forget(projectId: string): void {
    this.capsSet.set(projectId, (this.capsSet.get(projectId) ?? 0) + 1);
    for (const key of this.noCapUntil.keys()) if (key.startsWith(`${projectId}\u0000`)) this.noCapUntil.delete(key);
  }
}
