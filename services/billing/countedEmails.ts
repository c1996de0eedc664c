import type { EntityManager } from '@mikro-orm/postgresql';
import { emailRepository, type NewEmail } from '../../db/emails/emailRepository';
import { categoryOfSource, usageCaps, type UsageCategory } from './usageCaps';

/**
 * Records emails and counts their QUEUED ones against their categories' monthly caps, in one
 * transaction: all of them or, when a cap cannot take them, none (BillingLimitExceeded, whose
 * `category` says which). For callers in the worker that record mail one step at a time (the
 * automation SEND_EMAIL step, source WORKFLOW); /v1/send records through api/send/deliveryScheduler.ts
 * and campaign batches through their own partial reservation.
 *
 * With `skipExistingIds`, emails whose id is already recorded (a repeated step) are left out and
 * counted nowhere: only what this call recorded is reserved. Answers the ids it recorded.
 */
export async function recordCountedEmails(em: EntityManager, emails: NewEmail[], options: { skipExistingIds?: boolean } = {}): Promise<Set<string>> {
  return em.transactional(async (tx) => {
    const inserted = new Set(await emailRepository.insertMany(tx, emails, options));
    // A cap that cannot take them throws, and the rollback takes the rows back with it.
    await reserveFor(
      tx,
      emails.filter((e) => inserted.has(e.id)),
    );
    return inserted;
  });
}

async function reserveFor(tx: EntityManager, emails: NewEmail[]): Promise<void> {
  // One reservation per (project, category), taken in a fixed order so concurrent callers never deadlock.
  const counts = new Map<string, { projectId: string; category: UsageCategory; n: number }>();
  for (const email of emails) {
    if (email.status !== 'QUEUED') continue;
    const category = categoryOfSource[email.source];
    const key = `${email.projectId}/${category}`;
    const entry = counts.get(key) ?? { projectId: email.projectId, category, n: 0 };
    entry.n++;
    counts.set(key, entry);
  }
  for (const key of [...counts.keys()].sort()) {
    const { projectId, category, n } = counts.get(key)!;
    await usageCaps.reserve(tx, projectId, category, n);
  }
}
