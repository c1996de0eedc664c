import type { Orm } from '../../db/orm';
import { CoalescedLookup } from '../../lib/coalescedLookup';
import { usageCaps, type CategoryUsage, type UsageCategory } from '../../db/billing/usageCaps';

/**
 * A category's cap and this month's count, as the send path reads them to refuse a send the cap
 * clearly cannot take before anything is written. Concurrent sends of one project share the read
 * (lib/coalescedLookup.ts); the reservation in the recording transaction is what decides.
 */
export class CapUsageLookup {
  private readonly lookup: CoalescedLookup<CategoryUsage>;

  constructor(orm: Orm) {
    this.lookup = new CoalescedLookup((key) => {
      const [projectId, category] = key.split('\u0000');
      return usageCaps.current(orm.em.fork(), projectId, category as UsageCategory);
    });
  }

  current(projectId: string, category: UsageCategory): Promise<CategoryUsage> {
    return this.lookup.get(`${projectId}\u0000${category}`);
  }
}
