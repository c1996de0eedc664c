import type { EntityManager } from '@mikro-orm/postgresql';
import { OutboxMessageSchema, type OutboxMessage } from '../entities/outboxMessage';

/** The local outbox (mail captured instead of sent when SMTP_URL is unset), as the API lists it. */
export const outboxRepository = {
  /**
   * A project's messages newest first, without their raw bytes: `limit` of them after the
   * (createdAt, id) of `after`, the last message of the previous page.
   */
  async listPage(em: EntityManager, projectId: string, after: { t: string; id: string } | null, limit: number) {
    const where: Record<string, unknown> = { projectId };
    if (after) where.$or = [{ createdAt: { $lt: new Date(after.t) } }, { createdAt: new Date(after.t), id: { $lt: after.id } }];
    return em.find(OutboxMessageSchema, where, {
      orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
      limit,
      exclude: ['raw'],
    });
  },

  async find(em: EntityManager, projectId: string, id: string): Promise<OutboxMessage | null> {
    return em.findOne(OutboxMessageSchema, { id, projectId });
  },
};
