import type { EntityManager } from '@mikro-orm/postgresql';
import { startTestStack, type TestStack } from '../support/testStack';
import { startTestDnsServer, type TestDnsServer } from '../support/dnsServer';
import { startSmtpServer, type TestSmtpServer } from '../support/smtpServer';
import { projectWithVerifiedDomain } from '../support/sendingProject';
import { eventually } from '../support/eventually';
import type { TestAccount, TestProject } from '../support/accounts';
import { deleteContacts } from '../../db/contacts/contactDeletion';

/**
 * A contact deleted while its campaign wave is recorded (issue 39, item 3): the wave's recording
 * statement (campaignWaveRepository.recordRound) read the contact in its snapshot, and the
 * foreign keys of emails and events are what refuse it once the deletion commits; the statement
 * is run again (withContactsSettled) and no longer sees the contact. The races are made, not
 * hoped for: the test holds a transaction that makes one side wait on the contact's row, sees the
 * other side wait in pg_stat_activity, and only then lets go.
 *
 * What a user would notice is asserted: the deleted contact gets no mail and leaves no email or
 * event, every other contact gets the campaign once, and the campaign ends SENT with its counts.
 */
let dns: TestDnsServer;
let smtp: TestSmtpServer;
let stack: TestStack;
jest.setTimeout(120_000);

beforeAll(async () => {
  dns = await startTestDnsServer();
  smtp = await startSmtpServer();
  stack = await startTestStack({ env: { DNS_SERVERS: dns.address, DNS_TIMEOUT_MS: '2500', SMTP_URL: smtp.url } });
});

afterAll(async () => {
  await stack?.stop();
  await smtp?.close();
  await dns?.close();
});

const RECIPIENTS = 10;
const sql = <T = Record<string, unknown>>(query: string, params: unknown[] = []): Promise<T[]> => stack.orm.em.fork().execute(query, params);

interface Audience {
  account: TestAccount;
  project: TestProject;
  campaignId: string;
  /** Every recipient's address, by contact id. */
  addresses: Map<string, string>;
  victim: { id: string; email: string };
}

/** A sending project with RECIPIENTS subscribed contacts (one wave) and a DRAFT campaign to all of them. */
async function audience(prefix: string): Promise<Audience> {
  const { account, project, domain } = await projectWithVerifiedDomain(stack, dns);
  const emails = Array.from({ length: RECIPIENTS }, (_, i) => `${prefix}-${i}@example.org`);
  const rows = await sql<{ id: string; email: string }>(
    `insert into contacts (project_id, email, subscribed) select ?, e, true from jsonb_array_elements_text(?::jsonb) as e returning id, email`,
    [project.id, JSON.stringify(emails)],
  );
  const created = await stack.http.post(
    '/campaigns',
    { name: 'Race', subject: 'Hello {{email}}', body: '<p>Hi</p>', from: `news@${domain}`, audienceType: 'ALL' },
    { key: project.secretKey },
  );
  expect(created.status).toBe(201);
  const victim = rows.find((r) => r.email === `${prefix}-3@example.org`)!;
  return { account, project, campaignId: created.body.data.id, addresses: new Map(rows.map((r) => [r.id, r.email])), victim };
}

/**
 * Resolves once a backend of the test database whose statement starts with `statementStart`
 * waits for a row: on a transaction (transactionid) or for its turn at a row (tuple), never an
 * advisory lock. Answers its pid and the pids it waits for.
 */
function waiterForARow(statementStart: string): Promise<{ pid: number; blockers: number[] }> {
  return eventually(
    async () => {
      const [row] = await sql<{ pid: number; blockers: number[] }>(
        `select pid, pg_blocking_pids(pid) as blockers from pg_stat_activity
         where datname = current_database() and wait_event_type = 'Lock' and wait_event in ('transactionid', 'tuple')
           and ltrim(query) ilike ?`,
        [`${statementStart}%`],
      );
      if (!row) throw new Error(`no "${statementStart}…" waits for a row yet`);
      return row;
    },
    60_000,
    50,
  );
}

const waitsForARow = async (statementStart: string) => (await waiterForARow(statementStart)).blockers;

const RECORDING_STATEMENT = 'with state as';

/** A transaction of the test's own, kept open until `end` (committed, or rolled back with `rollback`). */
function heldTransaction<T>(body: (tx: EntityManager) => Promise<T>) {
  let end!: (how: 'commit' | 'rollback') => void;
  const told = new Promise<'commit' | 'rollback'>((resolve) => (end = resolve));
  let started!: (value: { pid: number; value: T }) => void;
  const ready = new Promise<{ pid: number; value: T }>((resolve) => (started = resolve));
  const rolledBack = new Error('rolled back by the test');
  const done = stack.orm.em
    .fork()
    .transactional(async (tx: EntityManager) => {
      const [{ pid }] = await tx.execute<Array<{ pid: number }>>(`select pg_backend_pid() as pid`);
      started({ pid, value: await body(tx) });
      if ((await told) === 'rollback') throw rolledBack;
    })
    .catch((err) => {
      if (err !== rolledBack) throw err;
    });
  return { ready, done, commit: () => end('commit'), rollback: () => end('rollback') };
}

async function send(a: Audience) {
  const res = await stack.http.post(`/campaigns/${a.campaignId}/send`, {}, { key: a.project.secretKey });
  expect(res.status).toBe(200);
}

const received = (a: Audience) => smtp.messages.filter((m) => [...a.addresses.values()].includes(m.envelopeTo[0]));

/** The campaign ended SENT; every contact but the victim got it once; the victim got nothing and left nothing. */
async function expectVictimSpared(a: Audience) {
  const campaign = await eventually(async () => {
    const c = (await stack.http.get(`/campaigns/${a.campaignId}`, { key: a.project.secretKey })).body;
    if (c.status !== 'SENT') throw new Error(`status ${c.status}`);
    return c;
  }, 60_000);
  // The audience was fixed while the deletion was not committed: the victim is counted in it, not sent to.
  expect(campaign).toMatchObject({ totalRecipients: RECIPIENTS, sentCount: RECIPIENTS - 1 });
  expect(await stack.temporal.workflow.getHandle(`campaign-${a.campaignId}`).result()).toMatchObject({ phase: 'SENT', sent: RECIPIENTS - 1 });

  // SENT comes after every hand-over of the send, and the sink keeps a message before it answers:
  // what is not in the sink now was never handed over.
  const perAddress = new Map<string, number>();
  for (const m of received(a)) perAddress.set(m.envelopeTo[0], (perAddress.get(m.envelopeTo[0]) ?? 0) + 1);
  const others = [...a.addresses.values()].filter((address) => address !== a.victim.email);
  expect(perAddress.get(a.victim.email)).toBeUndefined();
  expect(others.map((address) => [address, perAddress.get(address)])).toEqual(others.map((address) => [address, 1]));

  expect(await sql(`select id from contacts where id = ?`, [a.victim.id])).toEqual([]);
  expect(await sql(`select id from emails where contact_id = ? or (campaign_id = ? and to_address = ?)`, [a.victim.id, a.campaignId, a.victim.email])).toEqual(
    [],
  );
  expect(await sql(`select id from events where contact_id = ?`, [a.victim.id])).toEqual([]);
  const [rows] = await sql(
    `select count(*)::int as emails, count(*) filter (where status = 'SENT')::int as sent,
            (select count(*)::int from events v join emails m on m.id = v.email_id where m.campaign_id = ? and v.name = 'email.sent') as events
     from emails where campaign_id = ?`,
    [a.campaignId, a.campaignId],
  );
  expect(rows).toEqual({ emails: RECIPIENTS - 1, sent: RECIPIENTS - 1, events: RECIPIENTS - 1 });
  expect(await sql(`select 1 from campaign_batch_claims where campaign_id = ?`, [a.campaignId])).toEqual([]);
}

describe('a contact deleted while its wave is recorded gets no mail and leaves no row', () => {
  it('deleteContacts committed while the recording statement waits on the deleted row', async () => {
    const a = await audience('settled');
    // The deletion every path makes, in a transaction of the test's: the row is deleted, not yet committed.
    const deletion = heldTransaction((tx) => deleteContacts(tx, a.project.id, { ids: [a.victim.id] }));
    const { pid, value: deleted } = await deletion.ready;
    expect(deleted).toEqual([a.victim.id]);

    await send(a);
    // The statement read the contact (the deletion is not committed) and its foreign key check
    // waits for the deleting transaction: the race is on.
    expect(await waitsForARow(RECORDING_STATEMENT)).toEqual([pid]);
    expect(received(a)).toEqual([]);
    deletion.commit();
    await deletion.done;

    await expectVictimSpared(a);
  });

  /**
   * Through the API: the test holds the contact's row (FOR UPDATE, which both the delete and the
   * foreign key check's FOR KEY SHARE wait for), lets the deletion queue first, then the wave's
   * recording statement behind it, and lets go. The deletion takes the row, commits, and the
   * statement's check finds the contact gone. (FOR KEY SHARE would not do: it keeps the delete
   * waiting but lets the check through, and the wave would be recorded before the deletion.)
   */
  const apiPaths: Array<[string, string, (a: Audience) => Promise<() => Promise<void>>]> = [
    [
      'DELETE /contacts/:id',
      'api-delete',
      async (a) => {
        const answer = stack.http.delete(`/contacts/${a.victim.id}`, { key: a.project.secretKey });
        return async () => expect((await answer).status).toBe(204);
      },
    ],
    [
      'a bulk delete job',
      'api-bulk',
      async (a) => {
        const res = await stack.http.post('/contacts/bulk-delete', { contactIds: [a.victim.id] }, { key: a.project.secretKey });
        expect(res.status).toBe(202);
        return async () => {
          const job = await eventually(async () => {
            const body = (await stack.http.get(`/contacts/bulk/${res.body.jobId}`, { key: a.project.secretKey })).body;
            return body.status === 'COMPLETED' ? body : false;
          }, 60_000);
          expect(job).toMatchObject({ succeeded: 1, failed: 0 });
        };
      },
    ],
  ];

  it.each(apiPaths)('%s, committed while the recording statement waits behind it', async (_path, prefix, startDeletion) => {
    const a = await audience(prefix);
    const hold = heldTransaction((tx) => tx.execute(`select id from contacts where id = ? for update`, [a.victim.id]));
    const { pid } = await hold.ready;

    const deletionAnswered = await startDeletion(a);
    const deleter = await waiterForARow('delete from contacts');
    expect(deleter.blockers).toEqual([pid]);
    await send(a);
    // The statement's check waits for the row behind the deletion (which holds the row's turn).
    expect(await waitsForARow(RECORDING_STATEMENT)).toContain(deleter.pid);
    expect(received(a)).toEqual([]);
    hold.rollback();
    await hold.done;
    await deletionAnswered();

    await expectVictimSpared(a);
  });
});

describe('a project reset while a wave is recorded', () => {
  /**
   * A reset deletes the campaign (and the batch's claim with it) before the contacts, so its race
   * with a wave is decided at the claim: the recording statement's update of the claim waits for
   * the reset and then finds it gone, and records nothing. To have the statement start while the
   * reset is not committed, the test holds the recorder before it (the month's first campaign
   * count: the round waits at the counter row the test is inserting) and the reset at the
   * contacts (a row lock on one of them), and lets go of the recorder first.
   */
  it('records nothing, sends nothing, leaves nothing, and the send ends', async () => {
    const a = await audience('reset');
    const month = `date_trunc('month', now() at time zone 'utc')::date`;
    expect(await sql(`select 1 from billing_usage where project_id = ? and category = 'campaigns' and month = ${month}`, [a.project.id])).toEqual([]);
    const counter = heldTransaction((tx) =>
      tx.execute(`insert into billing_usage (project_id, month, category) values (?, ${month}, 'campaigns')`, [a.project.id]),
    );
    const { pid: counterPid } = await counter.ready;
    const hold = heldTransaction((tx) => tx.execute(`select id from contacts where id = ? for update`, [a.victim.id]));
    const { pid: holdPid } = await hold.ready;

    await send(a);
    // The wave's first round ran (nothing sendable is recorded without the month's counter row); its repeat waits.
    expect(await waitsForARow('insert into billing_usage')).toEqual([counterPid]);
    const reset = stack.http.post(`/users/@me/projects/${a.project.id}/reset`, {}, { cookie: a.account.cookie });
    const resetting = await waiterForARow('with gone as (delete from contacts');
    expect(resetting.blockers).toEqual([holdPid]);
    counter.rollback();
    await counter.done;
    // The repeated round started with the campaign, its claim and the contacts in its snapshot, and waits for the reset.
    expect(await waitsForARow(RECORDING_STATEMENT)).toEqual([resetting.pid]);
    hold.rollback();
    await hold.done;

    const answer = await reset;
    expect(answer.status).toBe(200);
    expect(answer.body.deleted).toMatchObject({ contacts: RECIPIENTS, campaigns: 1 });
    // The send ends (its batch finds its claim gone); after that nothing of this campaign is handed over.
    expect(await stack.temporal.workflow.getHandle(`campaign-${a.campaignId}`).result()).toMatchObject({ sent: 0 });
    expect(received(a)).toEqual([]);
    expect((await stack.http.get(`/campaigns/${a.campaignId}`, { key: a.project.secretKey })).status).toBe(404);
    const [left] = await sql(
      `select (select count(*)::int from contacts where project_id = ?) as contacts, (select count(*)::int from emails where project_id = ?) as emails,
              (select count(*)::int from events where project_id = ?) as events, (select count(*)::int from campaign_batch_claims where campaign_id = ?) as claims`,
      [a.project.id, a.project.id, a.project.id, a.campaignId],
    );
    expect(left).toEqual({ contacts: 0, emails: 0, events: 0, claims: 0 });
  });
});
