/**
 * Records a real history of every workflow into test/replay/histories/, for the replay test
 * (test/replay/replay.test.ts) that makes a non-deterministic workflow change fail CI.
 *
 *   node --import tsx scripts/recordWorkflowHistories.ts
 *
 * Run it when a workflow gains a new path worth pinning. Existing files are never overwritten:
 * old histories must keep replaying, since runs started by the old code may still be open.
 */
import fs from 'node:fs';
import path from 'node:path';
import globalSetup from '../test/support/globalSetup';
import globalTeardown from '../test/support/globalTeardown';
import { startTestStack } from '../test/support/testStack';
import { accountWithProject, signUp } from '../test/support/accounts';
import { uploadFile } from '../test/support/multipart';
import { eventually } from '../test/support/eventually';
import {
  billingUsageReportScheduleId,
  deliverySweepScheduleId,
  domainRecheckScheduleId,
  executionSweepScheduleId,
  hourlyCleanupScheduleId,
  inboundSweepScheduleId,
  segmentRecomputeScheduleId,
} from '../worker/schedules';
import { startStripeServer } from '../test/support/stripeServer';
import Stripe from 'stripe';
import { startWebhookReceiver } from '../test/support/webhookReceiver';
import { createEndpoint } from '../test/support/webhookEndpoints';
import { webhookDeliveryWorkflowId } from '../temporal/webhookDeliveryStart';
import { insertWorkflow } from '../test/workflows/workflowDefinitionRows';
import { startTestDnsServer } from '../test/support/dnsServer';
import { startSmtpServer } from '../test/support/smtpServer';
import { projectWithVerifiedDomain } from '../test/support/sendingProject';
import { importContactsWorkflow } from '../workflows';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import type { ScheduleExecutionResult } from '@temporalio/client';
import nodemailer from 'nodemailer';

const outDir = path.resolve(__dirname, '../test/replay/histories');

async function main() {
  await globalSetup();
  const dns = await startTestDnsServer();
  const smtp = await startSmtpServer({ rejectRecipients: ['refused@example.org'] });
  const stripeApi = await startStripeServer();
  const webhookSecret = 'whsec_record_histories';
  const receiver = await startWebhookReceiver();
  const stack = await startTestStack({
    smtpPorts: { inbound: 0 },
    env: {
      DNS_SERVERS: dns.address,
      SMTP_URL: smtp.url,
      DELIVERY_RETRY_DELAYS: '1s,1s',
      WEBHOOK_ALLOW_PRIVATE: 'true',
      WEBHOOK_RETRY_DELAYS_SECONDS: '1,1',
      STRIPE_SECRET_KEY: stripeApi.secretKey,
      STRIPE_WEBHOOK_SECRET: webhookSecret,
      STRIPE_PRICE_ID: 'price_record',
      STRIPE_API_URL: stripeApi.url,
    },
  });
  const saved: string[] = [];
  async function save(name: string, workflowId: string) {
    const handle = stack.temporal.workflow.getHandle(workflowId);
    await handle.result().catch(() => undefined);
    const file = path.join(outDir, `${name}.json`);
    if (fs.existsSync(file)) return;
    const history = await handle.fetchHistory();
    fs.writeFileSync(file, JSON.stringify(JSON.parse(historyToJSON(history)), null, 1));
    saved.push(file);
  }
  try {
    const { project, account } = await accountWithProject(stack.http);
    // The token of a requested account mail has the request's id, which is also in the workflow id.
    const token = await eventually(async () => {
      const [row] = await stack.orm.em.fork().execute(`select id from user_tokens where user_id = ?`, [account.userId]);
      if (!row) throw new Error('not issued yet');
      return row;
    });
    await save('accountEmailRequestWorkflow-sent', `account-email-${token.id}`);

    // A reset asked for an address without an account: the run ends without a mail.
    const accountMailRuns = async () => {
      const ids: string[] = [];
      const query = `TaskQueue = "${stack.config.temporalTaskQueue}" AND WorkflowType = "accountEmailRequestWorkflow"`;
      for await (const run of stack.temporal.workflow.list({ query })) ids.push(run.workflowId);
      return ids;
    };
    const before = await accountMailRuns();
    await stack.http.post('/auth/request-password-reset', { email: 'nobody@example.com' });
    const unknownRun = await eventually(async () => {
      const fresh = (await accountMailRuns()).filter((id) => !before.includes(id));
      if (fresh.length !== 1) throw new Error('not yet');
      return fresh[0];
    });
    await save('accountEmailRequestWorkflow-no-account', unknownRun);

    // Imports run their batches on the import task queue (patch "import-on-own-task-queue");
    // the histories recorded before it (importContactsWorkflow-completed/-failed) pin the old path.
    const upload = await uploadFile(stack.http.baseUrl, '/contacts/import', project.secretKey, {
      name: 'a.csv',
      content: 'email,plan\na@example.com,pro\nbad,free\n',
    });
    await save('importContactsWorkflow-importQueue-completed', `import-${upload.body.jobId}`);

    const contact = await stack.http.post('/contacts', { email: 'b@example.com' }, { key: project.secretKey });
    const bulk = await stack.http.post('/contacts/bulk-unsubscribe', { contactIds: [contact.body.id] }, { key: project.secretKey });
    await save('bulkContactsWorkflow-completed', `bulk-${bulk.body.jobId}`);

    // An import whose upload is missing: the failure path (job marked FAILED, workflow failed).
    const [doomed] = await stack.orm.em.fork().execute(`insert into jobs (project_id, type, total) values (?, 'IMPORT', 1) returning id`, [project.id]);
    await stack.temporal.workflow.start(importContactsWorkflow, {
      workflowId: `import-${doomed.id}`,
      taskQueue: stack.config.temporalTaskQueue,
      args: [{ jobId: doomed.id }],
    });
    await save('importContactsWorkflow-importQueue-failed', `import-${doomed.id}`);

    /** Triggers the schedule and answers the id of the run that trigger started (the newest). */
    async function triggerSchedule(scheduleId: string): Promise<string> {
      const schedule = stack.temporal.schedule.getHandle(scheduleId);
      const runId = (a: ScheduleExecutionResult) => a.action.workflow.workflowId;
      const before = new Set((await schedule.describe()).info.recentActions.map(runId));
      await schedule.trigger();
      return eventually(async () => {
        const started = (await schedule.describe()).info.recentActions.map(runId).filter((id) => !before.has(id));
        if (!started.length) throw new Error('not yet');
        return started[0];
      });
    }
    // The -completed and -attachments-completed files were recorded before the retention rules (patch "retention-rules").
    await save('hourlyCleanupWorkflow-retention-completed', await triggerSchedule(hourlyCleanupScheduleId(stack.config.temporalTaskQueue)));
    await save('domainRecheckWorkflow-completed', await triggerSchedule(domainRecheckScheduleId(stack.config.temporalTaskQueue)));

    // Tracked segments recomputed on schedule: one segment whose member leaves with time.
    const tracked = await stack.http.post(
      '/segments',
      {
        name: 'Recent buyers',
        trackMembership: true,
        condition: { logic: 'AND', groups: [{ filters: [{ field: 'event.purchase', operator: 'triggeredWithin', value: 1, unit: 'days' }] }] },
      },
      { key: project.secretKey },
    );
    if (tracked.status !== 201) throw new Error(`segment creation answered ${tracked.status}: ${tracked.text}`);
    await stack.http.post('/v1/track', { email: 'buyer@example.org', event: 'purchase' }, { key: project.publicKey });
    await stack.orm.em.fork().execute(`update events set created_at = now() - interval '2 days' where project_id = ? and name = 'purchase'`, [project.id]);
    await save('trackedSegmentsRecomputeWorkflow-completed', await triggerSchedule(segmentRecomputeScheduleId(stack.config.temporalTaskQueue)));
    await signUp(stack.http);

    // Transactional delivery: sent at once, sent after a temporary failure, refused for good,
    // and given up after the retries.
    const sender = await projectWithVerifiedDomain(stack, dns);
    const sendTo = async (to: string) => {
      const res = await stack.http.post('/v1/send', { to, from: `hi@${sender.domain}`, subject: 'Hi', body: '<p>Hi</p>' }, { key: sender.project.secretKey });
      if (res.status !== 200) throw new Error(`send answered ${res.status}: ${res.text}`);
      return `send-${res.body.data.emails[0].email}`;
    };
    // The emailDeliveryWorkflow files without localAttempts were recorded before attempts ran as local activities.
    await save('emailDeliveryWorkflow-localAttempts-sent', await sendTo('ok@example.org'));
    smtp.failTemporarily('later@example.org', 1);
    await save('emailDeliveryWorkflow-localAttempts-retried', await sendTo('later@example.org'));
    await save('emailDeliveryWorkflow-localAttempts-refused', await sendTo('refused@example.org'));
    smtp.failTemporarily('never@example.org', 10);
    await save('emailDeliveryWorkflow-localAttempts-gave-up', await sendTo('never@example.org'));

    // The sweep starts the delivery of mail an API process recorded but never scheduled.
    const stranded = await stack.http.post('/contacts', { email: 'stranded@example.org' }, { key: sender.project.secretKey });
    const [row] = await stack.orm.em.fork().execute(
      `insert into emails (id, project_id, contact_id, source, type, subject, from_address, to_address, html, text, status, message_id, delivery_workflow_id, created_at)
       values (gen_random_uuid(), ?, ?, 'TRANSACTIONAL', 'TRANSACTIONAL', 'Late', ?, 'stranded@example.org', '<p>x</p>', 'x', 'QUEUED', 'm', null, now() - interval '3 minutes') returning id`,
      [sender.project.id, stranded.body.id, `hi@${sender.domain}`],
    );
    const sweepRun = await triggerSchedule(deliverySweepScheduleId(stack.config.temporalTaskQueue));
    await save('emailDeliverySweepWorkflow-started', sweepRun);
    await save('emailDeliveryWorkflow-localAttempts-swept', `send-${row.id}`);

    // Mail in: a message received over SMTP and processed; the sweep starts the processing of a
    // stored message whose workflow never started.
    const mx = nodemailer.createTransport({ host: '127.0.0.1', port: stack.api.smtp.inbound!.port, secure: false, ignoreTLS: true });
    const receivedInfo = await mx.sendMail({ from: 'someone@sender.test', to: `hello@${sender.domain}`, subject: 'Hello', text: 'Hi there' });
    mx.close();
    const receivedId = /queued as (\S+)/.exec(receivedInfo.response)![1];
    await save('inboundMessagesWorkflow-processed', `inbound-${receivedId}`);
    const [storedInbound] = await stack.orm.em.fork().execute(
      `insert into inbound_messages (id, received_at, raw, size, envelope, workflow_id)
       values (gen_random_uuid(), now() - interval '3 minutes', convert_to('Subject: Late' || chr(13) || chr(10) || chr(13) || chr(10) || 'x', 'UTF8'), 20, ?::jsonb, null)
       returning id`,
      [
        JSON.stringify({
          mailFrom: 'late@sender.test',
          recipients: [{ address: `late@${sender.domain}`, projectIds: [sender.project.id], returnPath: false }],
          remoteAddress: '127.0.0.1',
          helo: 'client.test',
        }),
      ],
    );
    await stack.orm.em.fork().execute(`update inbound_messages set workflow_id = 'inbound-' || id where id = ?`, [storedInbound.id]);
    await save('inboundSweepWorkflow-started', await triggerSchedule(inboundSweepScheduleId(stack.config.temporalTaskQueue)));
    await save('inboundMessagesWorkflow-swept', `inbound-${storedInbound.id}`);

    // Campaigns: sent now to a small audience, scheduled then cancelled, and cancelled by an operator.
    await stack.orm.em
      .fork()
      .execute(
        `insert into contacts (project_id, email, subscribed, data) select ?, 'reader' || g || '@example.org', true, '{}'::jsonb from generate_series(1, 3) g`,
        [sender.project.id],
      );
    const campaign = async (name: string) => {
      const res = await stack.http.post(
        '/campaigns',
        { name, subject: 'Hi {{email}}', body: '<p>Hi</p>', from: `news@${sender.domain}`, audienceType: 'ALL' },
        { key: sender.project.secretKey },
      );
      if (res.status !== 201) throw new Error(`campaign creation answered ${res.status}: ${res.text}`);
      return res.body.data.id as string;
    };
    const sentNow = await campaign('Now');
    await stack.http.post(`/campaigns/${sentNow}/send`, {}, { key: sender.project.secretKey });
    await save('campaignSendWorkflow-sent', `campaign-${sentNow}`);
    const scheduled = await campaign('Later');
    await stack.http.post(`/campaigns/${scheduled}/send`, { scheduledFor: new Date(Date.now() + 3_600_000).toISOString() }, { key: sender.project.secretKey });
    await new Promise((r) => setTimeout(r, 1000));
    await stack.http.post(`/campaigns/${scheduled}/cancel`, {}, { key: sender.project.secretKey });
    await save('campaignSendWorkflow-cancelled', `campaign-${scheduled}`);

    // Automation executions: every step kind on the way (the event arrives), the wait timing out,
    // a cancel through the API, and the sweep.
    const template = await stack.http.post(
      '/templates',
      { name: 'Step', subject: 'Hi {{email}}', body: '<p>Hi</p>', from: `hi@${sender.domain}`, type: 'TRANSACTIONAL' },
      { key: sender.project.secretKey },
    );
    const walk = await insertWorkflow(stack, sender.project.id, {
      eventName: 'walked',
      allowReentry: true,
      steps: [
        { key: 'mail', type: 'SEND_EMAIL', config: { templateId: template.body.id }, templateId: template.body.id },
        { key: 'pause', type: 'DELAY', config: { amount: 0.02, unit: 'minutes' } },
        { key: 'wait', type: 'WAIT_FOR_EVENT', config: { eventName: 'walked-on', timeout: 3 } },
        { key: 'check', type: 'CONDITION', config: { field: 'event.go', operator: 'equals', value: true } },
        { key: 'hook', type: 'WEBHOOK', config: { url: `${receiver.url}/hook` } },
        { key: 'tag', type: 'UPDATE_CONTACT', config: { updates: { walked: true }, subscriptionAction: 'unsubscribe' } },
        { key: 'stop', type: 'EXIT', config: { reason: 'timed out' } },
      ],
      transitions: [
        { from: 'trigger', to: 'mail' },
        { from: 'mail', to: 'pause' },
        { from: 'pause', to: 'wait' },
        { from: 'wait', to: 'check', waitOutcome: 'EVENT' },
        { from: 'wait', to: 'stop', waitOutcome: 'TIMEOUT' },
        { from: 'check', to: 'hook', branch: 'yes' },
        { from: 'check', to: 'stop', branch: 'no' },
        { from: 'hook', to: 'tag' },
      ],
    });
    const executionOf = async (contactEmail: string) =>
      eventually(async () => {
        const [row] = await stack.orm.em
          .fork()
          .execute(`select x.id, x.status from workflow_executions x join contacts c on c.id = x.contact_id where x.workflow_id = ? and c.email = ?`, [
            walk.id,
            contactEmail,
          ]);
        if (!row) throw new Error('no execution yet');
        return row as { id: string; status: string };
      });
    const track = (email: string, event: string, data?: object) => stack.http.post('/v1/track', { email, event, data }, { key: sender.project.publicKey });
    await track('walker@example.org', 'walked');
    await eventually(async () => {
      if ((await executionOf('walker@example.org')).status !== 'WAITING') throw new Error('not waiting');
      const [row] = await stack.orm.em
        .fork()
        .execute(`select waiting_for_event from workflow_executions where id = ?`, [(await executionOf('walker@example.org')).id]);
      if (row.waiting_for_event !== 'walked-on') throw new Error('not waiting for the event');
    });
    await track('walker@example.org', 'walked-on', { go: true });
    // The -completed, -timed-out and -cancelled files without localSteps were recorded before the steps ran as local activities.
    await save('workflowExecutionWorkflow-localSteps-completed', `execution-${(await executionOf('walker@example.org')).id}`);
    await track('idler@example.org', 'walked');
    await save('workflowExecutionWorkflow-localSteps-timed-out', `execution-${(await executionOf('idler@example.org')).id}`);
    await track('leaver@example.org', 'walked');
    const leaving = await executionOf('leaver@example.org');
    await eventually(async () => {
      if ((await executionOf('leaver@example.org')).status !== 'WAITING') throw new Error('not waiting');
    });
    await stack.http.delete(`/workflows/${walk.id}/executions/${leaving.id}`, { key: sender.project.secretKey });
    await save('workflowExecutionWorkflow-localSteps-cancelled', `execution-${leaving.id}`);
    await save('workflowExecutionSweepWorkflow-completed', await triggerSchedule(executionSweepScheduleId(stack.config.temporalTaskQueue)));

    // A campaign stopped by the monthly campaigns cap: 3 recipients, room for 2 more.
    const limits = { transactional: null, campaigns: 5, workflows: null, inbound: null };
    const capped = await stack.http.put(`/users/@me/projects/${sender.project.id}/billing-limits`, limits, { cookie: sender.account.cookie });
    if (capped.status !== 200) throw new Error(`billing-limits answered ${capped.status}: ${capped.text}`);
    const atCap = await campaign('Capped');
    await stack.http.post(`/campaigns/${atCap}/send`, {}, { key: sender.project.secretKey });
    await save('campaignSendWorkflow-stopped-at-cap', `campaign-${atCap}`);

    // A campaign whose 60 emails the relay refuses for now: its retries start in two delivery
    // workflows (50 and 10), each naming all its emails in EmailIds (patch campaign-retries-in-chunks).
    const retrying = await projectWithVerifiedDomain(stack, dns);
    await stack.orm.em
      .fork()
      .execute(
        `insert into contacts (project_id, email, subscribed, data) select ?, 'later' || g || '@example.org', true, '{}'::jsonb from generate_series(1, 60) g`,
        [retrying.project.id],
      );
    const retried = await stack.http.post(
      '/campaigns',
      { name: 'Retried', subject: 'Hi', body: '<p>Hi</p>', from: `news@${retrying.domain}`, audienceType: 'ALL' },
      { key: retrying.project.secretKey },
    );
    if (retried.status !== 201) throw new Error(`campaign creation answered ${retried.status}: ${retried.text}`);
    smtp.refuseAll(true);
    await stack.http.post(`/campaigns/${retried.body.data.id}/send`, {}, { key: retrying.project.secretKey });
    await save('campaignSendWorkflow-retried-in-chunks', `campaign-${retried.body.data.id}`);
    smtp.refuseAll(false);

    // The hourly usage report: a subscribed project's usage reported after one failed attempt.
    const checkout = await stack.http.post(`/users/@me/projects/${sender.project.id}/checkout`, {}, { cookie: sender.account.cookie });
    if (checkout.status !== 200) throw new Error(`checkout answered ${checkout.status}: ${checkout.text}`);
    const [billing] = await stack.orm.em.fork().execute(`select stripe_customer_id from billing_accounts where project_id = ?`, [sender.project.id]);
    const payload = JSON.stringify({
      id: 'evt_record_subscription',
      object: 'event',
      created: Math.floor(Date.now() / 1000),
      type: 'customer.subscription.created',
      data: { object: { id: 'sub_record', object: 'subscription', customer: billing.stripe_customer_id, status: 'active', metadata: {}, items: { data: [] } } },
    });
    const signature = new Stripe('sk_test_signing_only').webhooks.generateTestHeaderString({ payload, secret: webhookSecret });
    await stack.http.request('POST', '/webhooks/incoming/stripe', {
      rawBody: payload,
      headers: { 'Content-Type': 'application/json', 'Stripe-Signature': signature },
    });
    stripeApi.failNext('/v1/billing/meter_events', 1, 500);
    await save('billingUsageReportWorkflow-reported', await triggerSchedule(billingUsageReportScheduleId(stack.config.temporalTaskQueue)));

    // Outbound webhooks: an endpoint answering 410 is disabled and its workflow ends; another
    // fails once, succeeds on its retry, and is deleted (its workflow cancelled).
    const { project: hooked } = await accountWithProject(stack.http);
    receiver.on('/gone', (_req, res) => res.writeHead(410).end());
    let flaky = 0;
    receiver.on('/flaky', (_req, res) => res.writeHead(flaky++ === 0 ? 500 : 200).end());
    const gone = await createEndpoint(stack, hooked, `${receiver.url}/gone`, ['gone.*']);
    const kept = await createEndpoint(stack, hooked, `${receiver.url}/flaky`, ['flaky.*']);
    await stack.http.post('/v1/track', { event: 'gone.once', email: 'hooked@example.org' }, { key: hooked.publicKey });
    await save('webhookDeliveryWorkflow-disabled', webhookDeliveryWorkflowId(gone.id));
    await stack.http.post('/v1/track', { event: 'flaky.once', email: 'hooked@example.org' }, { key: hooked.publicKey });
    await eventually(() => {
      if (receiver.requests.filter((r) => r.path === '/flaky').length < 2) throw new Error('not retried yet');
    });
    await stack.http.delete(`/webhook-endpoints/${kept.id}`, { key: hooked.secretKey });
    await save('webhookDeliveryWorkflow-deleted', webhookDeliveryWorkflowId(kept.id));
    // An idle endpoint: its run hands back to the workflow's timer, a later message's wake signal
    // starts another run, then the endpoint is disabled (the workflow cancelled).
    const sleeper = await createEndpoint(stack, hooked, `${receiver.url}/sleeper`, ['sleeper.*']);
    await stack.http.post('/v1/track', { event: 'sleeper.first', email: 'hooked@example.org' }, { key: hooked.publicKey });
    const sleeperRun = stack.temporal.workflow.getHandle(webhookDeliveryWorkflowId(sleeper.id));
    await eventually(async () => {
      const history = await sleeperRun.fetchHistory();
      if (!history.events?.some((e) => e.timerStartedEventAttributes)) throw new Error('not sleeping yet');
    }, 60_000);
    await stack.http.post('/v1/track', { event: 'sleeper.second', email: 'hooked@example.org' }, { key: hooked.publicKey });
    await eventually(() => {
      if (receiver.requests.filter((r) => r.path === '/sleeper').length < 2) throw new Error('not woken yet');
    });
    await stack.http.patch(`/webhook-endpoints/${sleeper.id}`, { enabled: false }, { key: hooked.secretKey });
    await save('webhookDeliveryWorkflow-woken-cancelled', webhookDeliveryWorkflowId(sleeper.id));
  } finally {
    await receiver.close();
    await stripeApi.close();
    await stack.stop();
    await smtp.close();
    await dns.close();
    await globalTeardown();
  }
  console.log(saved.length ? `recorded:\n${saved.join('\n')}` : 'nothing new to record');
}

// Exit once done: some handle (a pooled connection or timer of the stack) can outlive stop() and
// would keep the script waiting after every file is written.
main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
