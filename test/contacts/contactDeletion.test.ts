import type { EntityManager } from '@mikro-orm/postgresql';
import { startTestStack, type TestStack } from '../support/testStack';
import { accountWithProject, type TestAccount, type TestProject } from '../support/accounts';
import { eventually } from '../support/eventually';
import { contactDeletionLockKey, deleteContacts, holdContactsAgainstDeletion } from '../../db/contacts/contactDeletion';

/**
 * Every path that deletes contacts takes the project's contact deletion lock before its delete
 * (issue 39, item 3): a transaction holding it shared keeps the contacts, and what it recorded
 * for them, until it commits; a deletion holding it keeps a writer waiting, and the writer's next
 * statement no longer sees the contacts.
 */
let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack();
});
afterAll(() => stack.stop());

const query = <T>(sql: string, params: unknown[] = []): Promise<T[]> => stack.orm.em.fork().execute(sql, params);

/** Resolves once some backend of the test database waits for an advisory lock. */
const someoneWaitsOnTheLock = () =>
  eventually(async () => {
    const [row] = await query<{ n: number }>(
      `select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock' and wait_event = 'advisory'`,
    );
    return row.n > 0;
  });

async function projectWithContact(): Promise<{ account: TestAccount; project: TestProject; contactId: string }> {
  const { account, project } = await accountWithProject(stack.http);
  const created = await stack.http.post('/contacts', { email: 'kept@example.com' }, { key: project.secretKey });
  expect(created.status).toBe(201);
  return { account, project, contactId: created.body.id };
}

/** A transaction that takes the lock shared, records an event for the contact, and commits when told. */
function holder(projectId: string, contactId: string) {
  let commit!: () => void;
  const told = new Promise<void>((resolve) => (commit = resolve));
  let recorded!: () => void;
  const hasRecorded = new Promise<void>((resolve) => (recorded = resolve));
  const done = stack.orm.em.fork().transactional(async (tx: EntityManager) => {
    await holdContactsAgainstDeletion(tx, projectId);
    await tx.execute(`insert into events (project_id, contact_id, name, source) values (?, ?, 'recorded.under.lock', 'API')`, [projectId, contactId]);
    recorded();
    await told;
  });
  return { commit, hasRecorded, done };
}

const finishedJob = (project: TestProject, jobId: string) =>
  eventually(async () => {
    const job = (await stack.http.get(`/contacts/bulk/${jobId}`, { key: project.secretKey })).body;
    return job.status === 'COMPLETED' ? job : false;
  });

const paths: Array<[string, (a: { account: TestAccount; project: TestProject; contactId: string }) => Promise<void>]> = [
  [
    'DELETE /contacts/:id',
    async ({ project, contactId }) => {
      expect((await stack.http.delete(`/contacts/${contactId}`, { key: project.secretKey })).status).toBe(204);
    },
  ],
  [
    'a bulk delete job',
    async ({ project, contactId }) => {
      const res = await stack.http.post('/contacts/bulk-delete', { contactIds: [contactId] }, { key: project.secretKey });
      expect(res.status).toBe(202);
      expect(await finishedJob(project, res.body.jobId)).toMatchObject({ succeeded: 1, failed: 0 });
    },
  ],
  [
    'a project reset',
    async ({ account, project }) => {
      const res = await stack.http.post(`/users/@me/projects/${project.id}/reset`, {}, { cookie: account.cookie });
      expect(res.status).toBe(200);
      expect(res.body.deleted.contacts).toBe(1);
    },
  ],
  [
    'a project deletion',
    async ({ account, project }) => {
      expect((await stack.http.delete(`/users/@me/projects/${project.id}`, { cookie: account.cookie })).status).toBe(204);
    },
  ],
];

describe('deleting contacts waits for a transaction holding the lock shared', () => {
  it.each(paths)('%s', async (_name, deletePath) => {
    const setup = await projectWithContact();
    const { project, contactId } = setup;
    const held = holder(project.id, contactId);
    await held.hasRecorded;

    const deleting = deletePath(setup);
    await someoneWaitsOnTheLock();
    // Still there while the holder has not committed, from any other connection's view.
    expect(await query(`select id from contacts where id = ?`, [contactId])).toHaveLength(1);

    held.commit();
    await held.done;
    await deleting;
    expect(await query(`select id from contacts where id = ?`, [contactId])).toHaveLength(0);
    // What the holder recorded for the contact went with it.
    expect(
      await query(`select id from events where contact_id = ? or (project_id = ? and name = 'recorded.under.lock')`, [contactId, project.id]),
    ).toHaveLength(0);
  });
});

describe('a writer taking the lock waits for a deletion holding it', () => {
  it("and its next statement no longer sees the deleted contacts; another project's writer does not wait", async () => {
    const { project, contactId } = await projectWithContact();
    const other = await projectWithContact();

    let commit!: () => void;
    const told = new Promise<void>((resolve) => (commit = resolve));
    let deleted!: (ids: string[]) => void;
    const hasDeleted = new Promise<string[]>((resolve) => (deleted = resolve));
    const deletion = stack.orm.em.fork().transactional(async (tx: EntityManager) => {
      deleted(await deleteContacts(tx, project.id, { ids: [contactId] }));
      await told;
    });
    expect(await hasDeleted).toEqual([contactId]);

    // Unless the keys of the two projects collide (1 in 2^32), the other project's writer goes on.
    if (contactDeletionLockKey(other.project.id)[1] !== contactDeletionLockKey(project.id)[1]) {
      await stack.orm.em.fork().transactional(async (tx: EntityManager) => holdContactsAgainstDeletion(tx, other.project.id));
    }

    const writer = stack.orm.em.fork().transactional(async (tx: EntityManager) => {
      await holdContactsAgainstDeletion(tx, project.id);
      return tx.execute<Array<{ n: number }>>(`select count(*)::int as n from contacts where id = ?`, [contactId]);
    });
    await someoneWaitsOnTheLock();
    commit();
    await deletion;
    expect(await writer).toEqual([{ n: 0 }]);
  });

  it('derives the key from the project id alone (any case), in the class of contact deletions', () => {
    const id = '0b4ad0a1-7c5e-4a59-9d53-1f0c5c2e4b11';
    expect(contactDeletionLockKey(id)).toEqual(contactDeletionLockKey(id.toUpperCase()));
    expect(contactDeletionLockKey(id)[0]).toBe(212026);
    expect(Number.isInteger(contactDeletionLockKey(id)[1])).toBe(true);
  });
});
