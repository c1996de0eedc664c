import type { EntityManager } from '@mikro-orm/postgresql';

/**
 * Which of these email ids are recorded: how a writer whose commit went unanswered (the connection
 * lost with the reply) learns whether it committed after all, by the ids it chose before writing.
 */
export async function recordedEmailIds(em: EntityManager, ids: string[]): Promise<Set<string>> {
  if (!ids.length) return new Set();
  const rows = await em.execute<Array<{ id: string }>>(`select id from emails where id = any(?::uuid[])`, [`{${ids.join(',')}}`]);
  return new Set(rows.map((r) => r.id));
}
