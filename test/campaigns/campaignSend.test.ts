import { startTestStack, type TestStack } from '../support/testStack';
import { startTestDnsServer, type TestDnsServer } from '../support/dnsServer';
import { startSmtpServer, type TestSmtpServer } from '../support/smtpServer';
import { dkimResults, projectWithVerifiedDomain } from '../support/sendingProject';
import { eventually } from '../support/eventually';
import { activitiesFinished, runsClosed } from '../support/temporalRuns';
import type { TestProject } from '../support/accounts';

/** Campaign sends end to end: the campaign-<id> workflow, a real SMTP server and DNS for DKIM. */
let dns: TestDnsServer;
let smtp: TestSmtpServer;
let stack: TestStack;

beforeAll(async () => {
  dns = await startTestDnsServer();
  smtp = await startSmtpServer();
  stack = await startTestStack({ env: { DNS_SERVERS: dns.address, DNS_TIMEOUT_MS: '2500', SMTP_URL: smtp.url, DELIVERY_RETRY_DELAYS: '1s' } });
});

afterAll(async () => {
  await stack?.stop();
  await smtp?.close();
  await dns?.close();
});

const sql = (query: string, params: unknown[] = []) => stack.orm.em.fork().execute(query, params);

async function addContacts(project: TestProject, prefix: string, count: number, subscribed = true) {
  const rows = Array.from({ length: count }, (_, i) => ({ email: `${prefix}-${i}@example.org`, subscribed, data: { firstName: `Reader${i}` } }));
  await sql(
    `insert into contacts (project_id, email, subscribed, data)
     select ?, r.email, r.subscribed, r.data from jsonb_to_recordset(?::jsonb) as r(email text, subscribed boolean, data jsonb)`,
    [project.id, JSON.stringify(rows)],
  );
  return rows.map((r) => r.email);
}

async function createCampaign(project: TestProject, domain: string, overrides: Record<string, unknown> = {}) {
  const res = await stack.http.post(
    '/campaigns',
    {
      name: 'News',
      subject: 'News for {{firstName}}',
      body: '<p>Hello {{firstName}}, <a href="https://example.com/read">read on</a></p>',
      from: `news@${domain}`,
      audienceType: 'ALL',
      ...overrides,
    },
    { key: project.secretKey },
  );
  expect(res.status).toBe(201);
  return res.body.data;
}

const campaignOf = async (project: TestProject, id: string) => (await stack.http.get(`/campaigns/${id}`, { key: project.secretKey })).body;

async function untilStatus(project: TestProject, id: string, status: string, timeoutMs = 60_000) {
  return eventually(async () => {
    const campaign = await campaignOf(project, id);
    if (campaign.status !== status) throw new Error(`status ${campaign.status}`);
    return campaign;
  }, timeoutMs);
}

/**
 * Waits until the campaign's run has read the campaign and started the durable timer that waits
 * out its scheduledFor; answers the run's handle.
 */
async function untilTimerStarted(id: string) {
  const handle = stack.temporal.workflow.getHandle(`campaign-${id}`);
  await eventually(async () => {
    const history = await handle.fetchHistory();
    if (!history.events?.some((e) => e.timerStartedEventAttributes)) throw new Error('no timer yet');
  });
  return handle;
}

const received = (prefix: string) => smtp.messages.filter((m) => m.envelopeTo[0].startsWith(`${prefix}-`));

describe('sending a campaign', () => {
  it('MARKETING to ALL: every subscribed contact gets one rendered, signed copy; then SENT with counters', async () => {
    const { project, domain } = await projectWithVerifiedDomain(stack, dns);
    const subscribed = await addContacts(project, 'all', 30);
    await addContacts(project, 'unsub', 5, false);
    const campaign = await createCampaign(project, domain);
    const send = await stack.http.post(`/campaigns/${campaign.id}/send`, {}, { key: project.secretKey });
    expect(send.status).toBe(200);
    expect(send.body).toMatchObject({ success: true, data: { id: campaign.id, status: 'SENDING' }, message: 'Campaign is being sent' });

    const sent = await untilStatus(project, campaign.id, 'SENT');
    expect(sent).toMatchObject({ totalRecipients: 30, sentCount: 30, sentAt: expect.any(String) });
    await eventually(() => {
      if (received('all').length < 30) throw new Error(`${received('all').length} received`);
    });
    expect(received('unsub')).toHaveLength(0);
    expect(new Set(received('all').map((m) => m.envelopeTo[0])).size).toBe(30);
    const one = received('all').find((m) => m.envelopeTo[0] === subscribed[7])!;
    expect(one.parsed.subject).toBe('News for Reader7');
    expect(one.parsed.html).toContain('Hello Reader7');
    expect(one.raw).toMatch(/List-Unsubscribe-Post: List-Unsubscribe=One-Click/);
    expect(await dkimResults(stack, one.raw)).toEqual([
      expect.objectContaining({ signingDomain: domain, status: expect.objectContaining({ result: 'pass' }) }),
    ]);

    const [emails] = await sql(
      `select count(*)::int as n, count(distinct contact_id)::int as contacts from emails where campaign_id = ? and source = 'CAMPAIGN'`,
      [campaign.id],
    );
    expect(emails).toEqual({ n: 30, contacts: 30 });
    const stats = await stack.http.get(`/campaigns/${campaign.id}/stats`, { key: project.secretKey });
    expect(stats.body.data).toMatchObject({ totalRecipients: 30, sentCount: 30 });
    const workflow = await stack.temporal.workflow.getHandle(`campaign-${campaign.id}`).result();
    expect(workflow).toMatchObject({ phase: 'SENT', sent: 30, recipients: 30 });
  });

  it('records each email once, in its final state before its hand-over: no row is written again, and its bytes are reproducible', async () => {
    // Every update of a campaign email, seen from the database: which row, from and to which status.
    await sql(`create table test_campaign_email_updates (email_id uuid, old_status text, new_status text)`);
    await sql(`create function test_note_campaign_email_updates() returns trigger language plpgsql as $fn$
      begin
        insert into test_campaign_email_updates select n.id, o.status, n.status from new_rows n join old_rows o on o.id = n.id where n.campaign_id is not null;
        return null;
      end $fn$`);
    await sql(`create trigger test_campaign_email_updates after update on emails referencing old table as old_rows new table as new_rows
      for each statement execute function test_note_campaign_email_updates()`);
    try {
      const { project, domain } = await projectWithVerifiedDomain(stack, dns);
      await addContacts(project, 'once', 120);
      const campaign = await createCampaign(project, domain);
      await stack.http.post(`/campaigns/${campaign.id}/send`, {}, { key: project.secretKey });
      await untilStatus(project, campaign.id, 'SENT');
      const updates = await sql(`select count(*)::int as n from test_campaign_email_updates u join emails e on e.id = u.email_id where e.campaign_id = ?`, [
        campaign.id,
      ]);
      // Claiming them, then recording the outcome, were two updates each before the claim per batch.
      expect(updates).toEqual([{ n: 0 }]);
      const [row] = await sql(
        `select count(*)::int as n, min(attempts) as min, max(attempts) as max, count(message_stamp)::int as stamped, count(sent_at)::int as sent
         from emails where campaign_id = ? and status = 'SENT'`,
        [campaign.id],
      );
      expect(row).toEqual({ n: 120, min: 1, max: 1, stamped: 120, sent: 120 });
      const [events] = await sql(
        `select count(*)::int as n from events e join emails m on m.id = e.email_id where m.campaign_id = ? and e.name = 'email.sent'`,
        [campaign.id],
      );
      expect(events.n).toBe(120);
      // No claim is left behind once the batches ended.
      expect(await sql(`select 1 from campaign_batch_claims where campaign_id = ?`, [campaign.id])).toHaveLength(0);
      // The row rebuilds the very bytes the relay received (built and stamped before the row was written).
      await eventually(() => {
        if (received('once').length < 120) throw new Error(`${received('once').length} received`);
      });
      const one = received('once')[17];
      const [email] = await sql(`select id from emails where campaign_id = ? and to_address = ?`, [campaign.id, one.envelopeTo[0]]);
      const raw = await stack.http.get(`/emails/${email.id}/raw`, { key: project.secretKey });
      expect(raw.status).toBe(200);
      expect(raw.text).toBe(one.raw);
    } finally {
      await sql(`drop trigger test_campaign_email_updates on emails`);
      await sql(`drop function test_note_campaign_email_updates()`);
      await sql(`drop table test_campaign_email_updates`);
    }
  });

  it('a contact deleted, unsubscribed or suppressed after its batch read it, before its wave is recorded, gets no mail', async () => {
    const { project, domain } = await projectWithVerifiedDomain(stack, dns);
    const everyone = await addContacts(project, 'late', 40);
    const [deleted, unsubscribed, suppressed] = [everyone[3], everyone[17], everyone[31]];
    const campaign = await createCampaign(project, domain);
    // The batch has read its recipients when it takes its claim, and records its first wave after:
    // a trigger on the claim changes the three contacts in between, as a concurrent request would.
    await sql(`create function test_change_late_contacts() returns trigger language plpgsql as $fn$
      begin
        if new.campaign_id = '${campaign.id}' then
          delete from contacts where project_id = '${project.id}' and email = '${deleted}';
          update contacts set subscribed = false where project_id = '${project.id}' and email = '${unsubscribed}';
          insert into email_suppressions (project_id, email, reason) values ('${project.id}', '${suppressed}', 'BOUNCE') on conflict do nothing;
        end if;
        return null;
      end $fn$`);
    await sql(`create trigger test_change_late_contacts after insert on campaign_batch_claims for each row execute function test_change_late_contacts()`);
    try {
      expect((await stack.http.post(`/campaigns/${campaign.id}/send`, {}, { key: project.secretKey })).status).toBe(200);
      const sent = await untilStatus(project, campaign.id, 'SENT');
      expect(sent).toMatchObject({ totalRecipients: 40, sentCount: 37 });
    } finally {
      await sql(`drop trigger test_change_late_contacts on campaign_batch_claims`);
      await sql(`drop function test_change_late_contacts()`);
    }
    await eventually(() => {
      if (received('late').length < 37) throw new Error(`${received('late').length} received`);
    });
    // The run has closed and its activities returned: nothing more will arrive.
    await activitiesFinished(stack);
    const addresses = received('late').map((m) => m.envelopeTo[0]);
    expect(addresses).toHaveLength(37);
    expect(addresses).not.toEqual(expect.arrayContaining([deleted]));
    expect(addresses).not.toEqual(expect.arrayContaining([unsubscribed]));
    expect(addresses).not.toEqual(expect.arrayContaining([suppressed]));
    const rows = (await sql(`select to_address, status, error, sent_at, message_stamp from emails where campaign_id = ? and to_address = any(?::text[])`, [
      campaign.id,
      `{${[deleted, unsubscribed, suppressed].join(',')}}`,
    ])) as Array<{ to_address: string }>;
    expect(rows.sort((a, b) => a.to_address.localeCompare(b.to_address))).toEqual(
      [
        {
          to_address: suppressed,
          status: 'SUPPRESSED',
          error: 'The address is suppressed after a hard bounce or a complaint',
          sent_at: null,
          message_stamp: null,
        },
        { to_address: unsubscribed, status: 'SUPPRESSED', error: 'The contact is unsubscribed', sent_at: null, message_stamp: null },
      ].sort((a, b) => a.to_address.localeCompare(b.to_address)),
    );
    const workflow = await stack.temporal.workflow.getHandle(`campaign-${campaign.id}`).result();
    expect(workflow).toMatchObject({ phase: 'SENT', sent: 37, suppressed: 2 });
  });

  it("SEGMENT and FILTERED audiences: only the segment's members, only the contacts the condition matches", async () => {
    const { project, domain } = await projectWithVerifiedDomain(stack, dns);
    const everyone = await addContacts(project, 'aud', 6);
    await sql(`update contacts set data = data || '{"plan": "pro"}' where project_id = ? and email = any(?::text[])`, [
      project.id,
      `{${everyone.slice(0, 2).join(',')}}`,
    ]);
    const segment = await stack.http.post('/segments', { name: 'Hand picked', type: 'STATIC' }, { key: project.secretKey });
    expect(segment.status).toBe(201);
    await stack.http.post(`/segments/${segment.body.id}/members`, { emails: everyone.slice(3, 6) }, { key: project.secretKey });

    const bySegment = await createCampaign(project, domain, { audienceType: 'SEGMENT', segmentId: segment.body.id, subject: 'Segment' });
    await stack.http.post(`/campaigns/${bySegment.id}/send`, {}, { key: project.secretKey });
    expect((await untilStatus(project, bySegment.id, 'SENT')).totalRecipients).toBe(3);

    const filtered = await createCampaign(project, domain, {
      audienceType: 'FILTERED',
      subject: 'Filtered',
      audienceCondition: { logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }] }] },
    });
    await stack.http.post(`/campaigns/${filtered.id}/send`, {}, { key: project.secretKey });
    expect((await untilStatus(project, filtered.id, 'SENT')).totalRecipients).toBe(2);

    await eventually(() => {
      if (smtp.messages.filter((m) => m.parsed.subject === 'Segment').length < 3 || smtp.messages.filter((m) => m.parsed.subject === 'Filtered').length < 2)
        throw new Error('not yet');
    });
    const segmentMail = smtp.messages
      .filter((m) => m.parsed.subject === 'Segment')
      .map((m) => m.envelopeTo[0])
      .sort();
    expect(segmentMail).toEqual(everyone.slice(3, 6).sort());
    const filteredMail = smtp.messages
      .filter((m) => m.parsed.subject === 'Filtered')
      .map((m) => m.envelopeTo[0])
      .sort();
    expect(filteredMail).toEqual(everyone.slice(0, 2).sort());
  });

  it('TRANSACTIONAL campaigns reach unsubscribed contacts too', async () => {
    const { project, domain } = await projectWithVerifiedDomain(stack, dns);
    await addContacts(project, 'tx-sub', 3);
    await addContacts(project, 'tx-unsub', 2, false);
    const campaign = await createCampaign(project, domain, { type: 'TRANSACTIONAL' });
    await stack.http.post(`/campaigns/${campaign.id}/send`, {}, { key: project.secretKey });
    expect((await untilStatus(project, campaign.id, 'SENT')).totalRecipients).toBe(5);
    await eventually(() => {
      if (received('tx-sub').length + received('tx-unsub').length < 5) throw new Error('not yet');
    });
  });

  it("keeps to the project's cap on campaign mail per second", async () => {
    const { account, project, domain } = await projectWithVerifiedDomain(stack, dns);
    const capped = await stack.http.patch(`/users/@me/projects/${project.id}`, { campaignRatePerSecond: 200 }, { cookie: account.cookie });
    expect(capped.status).toBe(200);
    await addContacts(project, 'paced', 1200);
    const campaign = await createCampaign(project, domain, { subject: 'Paced' });
    const started = Date.now();
    await stack.http.post(`/campaigns/${campaign.id}/send`, {}, { key: project.secretKey });
    await untilStatus(project, campaign.id, 'SENT');
    // 1,200 recipients at 200 a second, one batch of 200 a second: at least 5 s.
    expect(Date.now() - started).toBeGreaterThanOrEqual(5000);
    const times = smtp.messages.filter((m) => m.parsed.subject === 'Paced').map((m) => m.parsed.date!.getTime());
    expect(times).toHaveLength(1200);
  });

  it('a scheduled campaign waits on a durable timer, then sends', async () => {
    const { project, domain } = await projectWithVerifiedDomain(stack, dns);
    await addContacts(project, 'later', 3);
    const campaign = await createCampaign(project, domain);
    // Far enough ahead that even a slow machine has the run waiting on its timer long before it fires.
    const at = new Date(Date.now() + 15_000).toISOString();
    const res = await stack.http.post(`/campaigns/${campaign.id}/send`, { scheduledFor: at }, { key: project.secretKey });
    expect(res.body).toMatchObject({ data: { status: 'SCHEDULED' }, message: expect.stringContaining('Campaign scheduled for') });
    // The run waits on its durable timer: until it fires, the campaign stays SCHEDULED and no mail leaves.
    const handle = await untilTimerStarted(campaign.id);
    expect(received('later')).toHaveLength(0);
    expect((await campaignOf(project, campaign.id)).status).toBe('SCHEDULED');
    // Both were seen before the timer fired (the history read after them says so), while the run waited.
    expect((await handle.fetchHistory()).events?.some((e) => e.timerFiredEventAttributes)).toBe(false);
    const sent = await untilStatus(project, campaign.id, 'SENT');
    expect(new Date(sent.sentAt).getTime()).toBeGreaterThanOrEqual(Date.parse(at) - 50);
    await eventually(() => {
      if (received('later').length < 3) throw new Error('not yet');
    });
  }, 120_000);

  it('cancelling a scheduled campaign stops it before any mail', async () => {
    const { project, domain } = await projectWithVerifiedDomain(stack, dns);
    await addContacts(project, 'never', 3);
    const campaign = await createCampaign(project, domain);
    // An hour ahead: the cancel lands long before the schedule, however slow the machine.
    await stack.http.post(`/campaigns/${campaign.id}/send`, { scheduledFor: new Date(Date.now() + 3_600_000).toISOString() }, { key: project.secretKey });
    const cancel = await stack.http.post(`/campaigns/${campaign.id}/cancel`, {}, { key: project.secretKey });
    expect(cancel.status).toBe(200);
    const result = await stack.temporal.workflow.getHandle(`campaign-${campaign.id}`).result();
    // CANCELLED when the run was waiting out the schedule; NOT_SENDABLE when the cancel landed
    // before the run first read the campaign (a busy machine delays that first activity).
    expect(result).toMatchObject({ phase: expect.stringMatching(/^(CANCELLED|NOT_SENDABLE)$/), sent: 0 });
    // The run has closed, its activities have returned and no run of the campaign is open:
    // nothing more will arrive.
    await activitiesFinished(stack);
    await runsClosed(stack.temporal, `CampaignId = "${campaign.id}"`, { atLeast: 1 });
    expect(received('never')).toHaveLength(0);
    expect((await campaignOf(project, campaign.id)).status).toBe('CANCELLED');
  });

  it('cancelling a sending campaign stops further mail; what was handed over stays sent', async () => {
    const { project, domain } = await projectWithVerifiedDomain(stack, dns);
    await addContacts(project, 'stop', 1500);
    smtp.slowDown(20);
    try {
      const campaign = await createCampaign(project, domain);
      await stack.http.post(`/campaigns/${campaign.id}/send`, {}, { key: project.secretKey });
      await eventually(
        () => {
          if (received('stop').length < 20) throw new Error('not started');
        },
        60_000,
        20,
      );
      expect((await stack.http.post(`/campaigns/${campaign.id}/cancel`, {}, { key: project.secretKey })).status).toBe(200);
      const atCancel = received('stop').length;
      await stack.temporal.workflow.getHandle(`campaign-${campaign.id}`).result();
      // The batches the run had going finish their wave in flight and stop; with the run closed,
      // none starts again, and any delivery of the campaign's retries has closed too.
      await activitiesFinished(stack);
      await runsClosed(stack.temporal, `CampaignId = "${campaign.id}"`, { atLeast: 1 });
      const final = received('stop').length;
      expect(final).toBeLessThan(1500);
      // After the cancel, only the waves then in flight went out: 4 batches side by side, 25 a wave.
      expect(final - atCancel).toBeLessThanOrEqual(4 * 25);
      // What was handed over stays sent: every mail that arrived is recorded SENT, and no more.
      const [{ sent }] = await sql(`select count(*)::int as sent from emails where campaign_id = ? and status = 'SENT'`, [campaign.id]);
      expect(sent).toBe(final);
      // What was not handed over was withdrawn, as unattempted emails are, whether the batches
      // had recorded it claimed or not: no email is left QUEUED or SENDING, and the monthly
      // campaigns count keeps only the sent ones.
      const statuses = await sql(`select status, count(*)::int as n from emails where campaign_id = ? group by status`, [campaign.id]);
      expect(statuses).toEqual([{ status: 'SENT', n: final }]);
      const [usage] = await sql(`select coalesce(sum(used), 0)::int as used from billing_usage where project_id = ? and category = 'campaigns'`, [project.id]);
      expect(usage.used).toBe(final);
      const after = await campaignOf(project, campaign.id);
      expect(after.status).toBe('CANCELLED');
    } finally {
      smtp.slowDown(0);
    }
  });

  it('an operator cancelling the run in Temporal marks the campaign CANCELLED too', async () => {
    const { project, domain } = await projectWithVerifiedDomain(stack, dns);
    await addContacts(project, 'op', 2);
    const campaign = await createCampaign(project, domain);
    await stack.http.post(`/campaigns/${campaign.id}/send`, { scheduledFor: new Date(Date.now() + 60_000).toISOString() }, { key: project.secretKey });
    const handle = await untilTimerStarted(campaign.id);
    await handle.cancel();
    expect(await handle.result()).toMatchObject({ phase: 'CANCELLED' });
    expect((await campaignOf(project, campaign.id)).status).toBe('CANCELLED');
  });
});
