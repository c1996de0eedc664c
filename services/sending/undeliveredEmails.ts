import type { EntityManager } from '@mikro-orm/postgresql';
import type { EventTriggers } from '../events/eventTriggers';
import { emailRepository } from '../../db/emails/emailRepository';
import { deliveryWorkflowIds } from '../../temporal/deliveryWorkflowIds';
import { deliveryChunks } from '../../temporal/deliveryChunks';

/**
 * Accepted emails no delivery has touched within `olderThanSeconds`, grouped by the delivery
 * workflow that should own them (the one recorded, else the email's own `send-<id>`), for the
 * delivery sweep to start under the id the API would have used. A group larger than one
 * workflow may carry (recorded before MAX_EMAILS_PER_DELIVERY, by a larger DELIVERY_BATCH_MAX)
 * is cut: its first part keeps the recorded id, each further part is `deliver-<its first id>`.
 */
export async function findUndeliveredGroups(
  em: EntityManager,
  olderThanSeconds: number,
  limit: number,
): Promise<Array<{ projectId: string; workflowId: string; emailIds: string[] }>> {
  const groups = new Map<string, { projectId: string; workflowId: string; emailIds: string[] }>();
  for (const email of await emailRepository.findUnattempted(em, olderThanSeconds, limit)) {
    const workflowId = email.deliveryWorkflowId ?? deliveryWorkflowIds.single(email.id);
    const group = groups.get(workflowId) ?? { projectId: email.projectId, workflowId, emailIds: [] };
    group.emailIds.push(email.id);
    groups.set(workflowId, group);
  }
  return [...groups.values()].flatMap((group) =>
    deliveryChunks(group.emailIds).map((emailIds, i) => ({ ...group, workflowId: i === 0 ? group.workflowId : deliveryWorkflowIds.batch(emailIds), emailIds })),
  );
}

/** Gives up on emails whose retries are spent: FAILED with their last error, and `email.failed` handed to the triggers. */
export async function failUndeliveredEmails(services: { eventTriggers: EventTriggers }, em: EntityManager, emailIds: string[], reason: string): Promise<void> {
  const events = await emailRepository.failQueued(em, emailIds, reason);
  for (const [projectId, list] of events) await services.eventTriggers.afterEventsRecorded(projectId, list);
}
