import crypto from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';

/**
 * The one way contacts are deleted: one contact (DELETE /contacts/:id), a bulk delete job, a
 * project reset and a project deletion all come here, so all of them take the project's contact
 * deletion lock first (issue 39, item 3).
 *
 * The lock lets a writer that records rows referencing contacts (a campaign wave: its emails and
 * events) keep every contact it checked alive until it commits, without a row lock per contact:
 * the writer takes the lock SHARED (`holdContactsAgainstDeletion`) in a statement of its
 * transaction before the one that checks and records; deleters take it EXCLUSIVE here before
 * their first delete. Under READ COMMITTED each statement sees what was committed when it started,
 * so the order of statements is what makes it work:
 * - a deletion that got the lock first makes the writer wait at its lock statement, until the
 *   deletion commits; the recording statement starts after that and does not see the contacts;
 * - a writer that got the lock first makes the deletion wait until the writer commits; the delete
 *   statement starts after that and takes the recorded rows with the contacts (they cascade).
 * Taken inside the recording statement itself, the lock would come too late: that statement's
 * snapshot is taken before it waits, and it would record for contacts deleted meanwhile.
 *
 * Writers of one project share the lock and never wait for each other; only a deletion waits
 * for them and they for it. Transaction-scoped (pg_advisory_xact_lock): released at commit or
 * rollback, never left behind by a crashed process.
 */

/** The advisory lock class of contact deletions (two-key form; the analytics shards use 212025). */
export const CONTACT_DELETION_LOCK_CLASS = 212026;

/**
 * The two keys of a project's contact deletion lock: the class and 32 bits of the project id's
 * SHA-256. A statement of another module may take it as
 * `pg_advisory_xact_lock_shared(?, ?)` with these parameters. Two projects whose keys collide
 * only wait for each other's deletions now and then; nothing is ever let through.
 */
export function contactDeletionLockKey(projectId: string): [number, number] {
  return [CONTACT_DELETION_LOCK_CLASS, crypto.createHash('sha256').update(projectId.toLowerCase()).digest().readInt32BE(0)];
}

/**
 * Takes the project's lock SHARED for the rest of the caller's transaction: no contact of the
 * project is deleted until it commits. Call it in a statement before the one that relies on it
 * (see above), inside a transaction (outside one it would be released at once).
 */
export async function holdContactsAgainstDeletion(tx: EntityManager, projectId: string): Promise<void> {
  await tx.execute(`select pg_advisory_xact_lock_shared(?, ?)`, contactDeletionLockKey(projectId));
}

/** Takes the project's lock EXCLUSIVE for the rest of the caller's transaction (what a deleter does first). */
export async function lockContactsForDeletion(tx: EntityManager, projectId: string): Promise<void> {
  await tx.execute(`select pg_advisory_xact_lock(?, ?)`, contactDeletionLockKey(projectId));
}

/** Which of a project's contacts go: those among `ids` (any other project's are left alone), or all of them. */
export type ContactsToDelete = { ids: readonly string[] } | 'all';

/**
 * Deletes the project's contacts among `ids` (answers the ids deleted), or all of them (answers
 * how many), with the lock taken in a statement before the delete. Their emails, events,
 * executions and memberships go with them (every reference to contacts cascades). Runs in the
 * caller's transaction when there is one, else in its own.
 */
export function deleteContacts(em: EntityManager, projectId: string, which: { ids: readonly string[] }): Promise<string[]>;
export function deleteContacts(em: EntityManager, projectId: string, which: 'all'): Promise<number>;
export async function deleteContacts(em: EntityManager, projectId: string, which: ContactsToDelete): Promise<string[] | number> {
  const run = async (tx: EntityManager) => {
    await lockContactsForDeletion(tx, projectId);
    if (which === 'all') {
      const [row] = await tx.execute<Array<{ n: number }>>(
        `with gone as (delete from contacts where project_id = ? returning 1) select count(*)::int as n from gone`,
        [projectId],
      );
      return row.n;
    }
    if (!which.ids.length) return [];
    const rows = await tx.execute<Array<{ id: string }>>(
      `delete from contacts where project_id = ? and id in (select (jsonb_array_elements_text(?::jsonb))::uuid) returning id`,
      [projectId, JSON.stringify(which.ids)],
    );
    return rows.map((r) => r.id);
  };
  return em.isInTransaction() ? run(em) : em.transactional(run);
}
