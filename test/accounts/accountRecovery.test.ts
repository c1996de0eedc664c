import crypto from 'node:crypto';
import { startTestStack, type TestStack } from '../support/testStack';
import { startSmtpServer, type TestSmtpServer, type ReceivedMail } from '../support/smtpServer';
import { signUp } from '../support/accounts';
import { eventually } from '../support/eventually';

/**
 * Issue 13, item 3: account recovery cannot be abused. A newer reset token retires older ones, a
 * password change retires every open token, the request reveals nothing about the account, and
 * an address gets at most 3 mails of a kind per 15 minutes.
 */
let smtp: TestSmtpServer;
let stack: TestStack;
beforeAll(async () => {
  smtp = await startSmtpServer();
  stack = await startTestStack({ env: { SMTP_URL: smtp.url } });
});
afterAll(async () => {
  await stack.stop();
  await smtp.close();
});

const RESET_SUBJECT = 'Reset your Mailroom password';
const VERIFY_SUBJECT = 'Verify your Mailroom email address';

function tokenIn(mail: ReceivedMail): string {
  const match = /(?:token to POST \/auth\/verify-email:|POST \/auth\/reset-password:)\s+(\S+)/.exec(mail.parsed.text ?? '');
  if (!match) throw new Error(`no token in mail: ${mail.parsed.text}`);
  return match[1];
}

function mailsTo(email: string, subject: string): ReceivedMail[] {
  return smtp.messages.filter((m) => m.envelopeTo.includes(email) && m.parsed.subject === subject);
}

/** Waits until every account mail run of this stack has finished, so "no more mail" is a fact, not a guess. */
async function accountMailRuns(status?: string): Promise<number> {
  const query = `TaskQueue = "${stack.config.temporalTaskQueue}" AND WorkflowType = "accountEmailRequestWorkflow"${status ? ` AND ExecutionStatus = "${status}"` : ''}`;
  let n = 0;
  for await (const _run of stack.temporal.workflow.list({ query })) n++;
  return n;
}

/**
 * Waits until `expectedRuns` account-mail runs are visible and none is running. Visibility lags
 * behind starts (more so on a loaded machine), so "none running" alone could miss a run just started.
 */
async function accountMailRunsFinished(expectedRuns?: number): Promise<void> {
  await eventually(async () => {
    if (expectedRuns !== undefined && (await accountMailRuns()) < expectedRuns) throw new Error('a run is not visible yet');
    if (await accountMailRuns('Running')) throw new Error('still running');
    return true;
  });
}

/** A fresh client address: each scenario stays clear of the per-address request budget. */
function clientAddress(): string {
  const b = crypto.randomBytes(2);
  return `198.18.${b[0]}.${b[1]}`;
}
const testClient = clientAddress();

async function requestReset(email: string, from = testClient) {
  const res = await stack.http.post('/auth/request-password-reset', { email }, { headers: { 'X-Forwarded-For': from } });
  expect(res.status).toBe(200);
  return res;
}

describe('password reset tokens', () => {
  it('refuses the token of an earlier mail once a newer one was requested', async () => {
    const account = await signUp(stack.http);
    await requestReset(account.email);
    const first = tokenIn(await smtp.waitFor((m) => m.envelopeTo.includes(account.email) && m.parsed.subject === RESET_SUBJECT));
    await requestReset(account.email);
    await eventually(() => expect(mailsTo(account.email, RESET_SUBJECT)).toHaveLength(2));
    const second = tokenIn(mailsTo(account.email, RESET_SUBJECT)[1]);
    expect(second).not.toBe(first);

    const stale = await stack.http.post('/auth/reset-password', { token: first, password: 'an attacker password' });
    expect(stale.status).toBe(400);
    expect(stale.body.error.message).toMatch(/invalid, expired or already used/);
    expect((await stack.http.post('/auth/reset-password', { token: second, password: 'the owner new password' })).status).toBe(200);
    expect((await stack.http.post('/auth/login', { email: account.email, password: 'the owner new password' })).status).toBe(200);
  });

  it('retires every open token of the account when the password changes', async () => {
    const account = await signUp(stack.http);
    const verification = tokenIn(await smtp.waitFor((m) => m.envelopeTo.includes(account.email) && m.parsed.subject === VERIFY_SUBJECT));
    await requestReset(account.email);
    const reset = tokenIn(await smtp.waitFor((m) => m.envelopeTo.includes(account.email) && m.parsed.subject === RESET_SUBJECT));

    expect((await stack.http.post('/auth/reset-password', { token: reset, password: 'a changed password' })).status).toBe(200);
    expect((await stack.http.post('/auth/verify-email', { token: verification })).status).toBe(400);
    const [open] = await stack.orm.em.fork().execute(`select count(*)::int as n from user_tokens where user_id = ? and used_at is null`, [account.userId]);
    expect(open.n).toBe(0);
  });

  it('never puts a usable token in Temporal: the run carries a random id and the address, the mail the token', async () => {
    const account = await signUp(stack.http);
    await requestReset(account.email);
    const token = tokenIn(await smtp.waitFor((m) => m.envelopeTo.includes(account.email) && m.parsed.subject === RESET_SUBJECT));
    await accountMailRunsFinished();
    // Every run on the stack's task queue, the scheduled ones too (cleanup, the domain re-check at
    // each quarter hour): none may hold the token, and the account mail is named by a random id.
    const runs: Array<{ workflowId: string; runId: string }> = [];
    for await (const run of stack.temporal.workflow.list({ query: `TaskQueue = "${stack.config.temporalTaskQueue}"` })) runs.push(run);
    const accountMailRuns = runs.filter((run) => run.workflowId.startsWith('account-email'));
    expect(accountMailRuns.length).toBeGreaterThan(0);
    expect(accountMailRuns.filter((run) => !/^account-email-[0-9a-f-]{36}$/.test(run.workflowId))).toEqual([]);
    for (const run of runs) {
      const history = JSON.stringify(await stack.temporal.workflow.getHandle(run.workflowId, run.runId).fetchHistory());
      expect(history).not.toContain(token);
    }
  });
});

describe('the reset request reveals nothing', () => {
  it('answers a known and an unknown address alike, without looking either up on the request path', async () => {
    // No worker: whatever the request does before answering, it does without the lookup or the mail.
    const bare = await startTestStack({ worker: false });
    try {
      const account = await signUp(bare.http);
      const known = await bare.http.post('/auth/request-password-reset', { email: account.email });
      const unknown = await bare.http.post('/auth/request-password-reset', { email: 'nobody-here@example.com' });
      expect(known.status).toBe(200);
      expect(unknown.status).toBe(200);
      expect(unknown.body).toEqual(known.body);
      expect([...unknown.headers.keys()].sort()).toEqual([...known.headers.keys()].sort());
      expect(unknown.headers.get('content-length')).toBe(known.headers.get('content-length'));
      const [tokens] = await bare.orm.em.fork().execute(`select count(*)::int as n from user_tokens where purpose = 'RESET_PASSWORD'`);
      expect(tokens.n).toBe(0);
    } finally {
      await bare.stop();
    }
  });
});

describe('mail limits per address', () => {
  it('sends at most 3 reset mails per address per 15 minutes, answering every request the same', async () => {
    const account = await signUp(stack.http);
    const from = clientAddress();
    const answers = [];
    await accountMailRunsFinished();
    const runsBefore = await accountMailRuns();
    for (let i = 0; i < 8; i++) {
      answers.push(await requestReset(account.email, from));
      // One request after another, each run finished before the next (a person pressing "send again").
      // Within the limit, finished means its mail arrived: visibility lags on a loaded machine, so
      // runsBefore may miss a run still invisible (the sign-up's) and the count end one run early,
      // and the next request would then retire this token before its mail went out (a fresh-clone
      // run counted 2 mails here).
      const mailsDue = Math.min(i + 1, 3);
      await eventually(() => {
        if (mailsTo(account.email, RESET_SUBJECT).length < mailsDue) throw new Error(`fewer than ${mailsDue} reset mails yet`);
      });
      await accountMailRunsFinished(runsBefore + i + 1);
    }
    for (const answer of answers) expect(answer.body).toEqual(answers[0].body);
    // Exactly 3 arrive.
    await eventually(() => expect(mailsTo(account.email, RESET_SUBJECT)).toHaveLength(3));

    // Once the window has passed, mail flows again.
    await stack.orm.em.fork().execute(`update user_tokens set created_at = created_at - interval '16 minutes' where user_id = ?`, [account.userId]);
    await requestReset(account.email);
    await eventually(() => expect(mailsTo(account.email, RESET_SUBJECT)).toHaveLength(4));
  });

  it('holds when the requests arrive together: 8 at once issue 3 tokens, only the newest works', async () => {
    const account = await signUp(stack.http);
    const from = clientAddress();
    const answers = await Promise.all(Array.from({ length: 8 }, () => requestReset(account.email, from)));
    expect(answers.map((a) => a.status)).toEqual(Array(8).fill(200));
    await accountMailRunsFinished();
    const [issued] = await stack.orm.em
      .fork()
      .execute(
        `select count(*)::int as n, count(*) filter (where used_at is null)::int as open from user_tokens where user_id = ? and purpose = 'RESET_PASSWORD'`,
        [account.userId],
      );
    expect(issued).toEqual({ n: 3, open: 1 });
    // A token retired before its mail went out is not mailed, so 1 to 3 mails arrive; never more.
    const mails = mailsTo(account.email, RESET_SUBJECT);
    expect(mails.length).toBeGreaterThanOrEqual(1);
    expect(mails.length).toBeLessThanOrEqual(3);
    const results = [];
    for (const mail of mails) results.push((await stack.http.post('/auth/reset-password', { token: tokenIn(mail), password: 'a together password' })).status);
    expect(results.filter((status) => status === 200)).toHaveLength(1);
  });

  it('sends at most 3 verification mails per address per 15 minutes, the signup mail included', async () => {
    await accountMailRunsFinished();
    const runsBefore = await accountMailRuns();
    const account = await signUp(stack.http);
    const from = clientAddress();
    const answers = await Promise.all(
      Array.from({ length: 7 }, () => stack.http.post('/auth/request-verification', {}, { cookie: account.cookie, headers: { 'X-Forwarded-For': from } })),
    );
    for (const answer of answers) {
      expect(answer.status).toBe(200);
      expect(answer.body).toEqual({ success: true, alreadyVerified: false });
    }
    // The signup's run and the 7 requests' runs have all closed: what they were going to send has been sent.
    await accountMailRunsFinished(runsBefore + 8);
    expect(mailsTo(account.email, VERIFY_SUBJECT)).toHaveLength(3);
  });
});

describe('requests per client address', () => {
  it('answers 429 with Retry-After after 30 account mail requests from one address, known or unknown emails alike', async () => {
    const account = await signUp(stack.http);
    const from = clientAddress();
    const statuses: number[] = [];
    for (let i = 0; i < 30; i++) {
      const email = i % 2 ? account.email : `nobody-${i}@example.com`;
      statuses.push((await stack.http.post('/auth/request-password-reset', { email }, { headers: { 'X-Forwarded-For': from } })).status);
    }
    expect(statuses).toEqual(Array(30).fill(200));
    for (const email of [account.email, 'nobody-else@example.com']) {
      const limited = await stack.http.post('/auth/request-password-reset', { email }, { headers: { 'X-Forwarded-For': from } });
      expect(limited.status).toBe(429);
      expect(limited.body.error.code).toBe('RATE_LIMIT_EXCEEDED');
      expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    }
    const verification = await stack.http.post('/auth/request-verification', {}, { cookie: account.cookie, headers: { 'X-Forwarded-For': from } });
    expect(verification.status).toBe(429);
    // Another client is not affected.
    expect((await requestReset(account.email, clientAddress())).status).toBe(200);
    await accountMailRunsFinished();
  });
});
