import crypto from 'node:crypto';
import { startTestStack, type TestStack } from '../support/testStack';
import { startSmtpServer, type TestSmtpServer, type ReceivedMail } from '../support/smtpServer';
import { cookieFrom } from '../support/http';
import { signUp } from '../support/accounts';
import { eventually } from '../support/eventually';
import { listRuns, runsClosed } from '../support/temporalRuns';

let smtp: TestSmtpServer;
let stack: TestStack;
beforeAll(async () => {
  smtp = await startSmtpServer();
  stack = await startTestStack({ env: { SMTP_URL: smtp.url, MAIL_FROM: 'Mailroom <accounts@mailroom.test>' } });
});
afterAll(async () => {
  await stack.stop();
  await smtp.close();
});

/** This stack's account mail runs (one per verification or reset request). */
const accountMailRunsQuery = () => `TaskQueue = "${stack.config.temporalTaskQueue}" AND WorkflowType = "accountEmailRequestWorkflow"`;

/** The token printed in an account mail (the text part shows it on its own line). */
function tokenIn(mail: ReceivedMail): string {
  const match = /(?:token to POST \/auth\/verify-email:|POST \/auth\/reset-password:)\s+(\S+)/.exec(mail.parsed.text ?? '');
  if (!match) throw new Error(`no token in mail: ${mail.parsed.text}`);
  return match[1];
}

describe('signup and login', () => {
  it('signs up, sets an httpOnly SameSite=Lax session cookie, and knows the user', async () => {
    const res = await stack.http.post('/auth/signup', { email: '  New.User@Example.com ', password: 'a fine password' });
    expect(res.status).toBe(201);
    expect(res.body.user).toMatchObject({ email: 'new.user@example.com', emailVerified: false });
    const setCookie = res.headers.getSetCookie().find((c) => c.startsWith('mailroom_session='))!;
    expect(setCookie).toMatch(/httponly/i);
    expect(setCookie).toMatch(/samesite=lax/i);
    const me = await stack.http.get('/users/@me', { cookie: cookieFrom(res) });
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ id: res.body.user.id, email: 'new.user@example.com' });
  });

  it('refuses a taken email with 409, also when twenty signups race for it', async () => {
    const results = await Promise.all(
      Array.from({ length: 20 }, () => stack.http.post('/auth/signup', { email: 'race@example.com', password: 'a fine password' })),
    );
    expect(results.filter((r) => r.status === 201)).toHaveLength(1);
    expect(results.filter((r) => r.status === 409)).toHaveLength(19);
    expect(results.find((r) => r.status === 409)!.body.error.code).toBe('CONFLICT');
  });

  it('rejects weak and oversize passwords with 422', async () => {
    expect((await stack.http.post('/auth/signup', { email: 'weak@example.com', password: 'short' })).status).toBe(422);
    const tooLong = await stack.http.post('/auth/signup', { email: 'long@example.com', password: 'é'.repeat(40) });
    expect(tooLong.status).toBe(422);
    expect(tooLong.body.error.errors[0].field).toBe('password');
  });

  it('logs in with the right password and answers 401 INVALID_CREDENTIALS otherwise', async () => {
    const account = await signUp(stack.http);
    const ok = await stack.http.post('/auth/login', { email: account.email.toUpperCase(), password: account.password });
    expect(ok.status).toBe(200);
    expect(ok.body.user.id).toBe(account.userId);
    expect(cookieFrom(ok)).toMatch(/^mailroom_session=/);
    for (const body of [
      { email: account.email, password: 'wrong password' },
      { email: 'nobody@example.com', password: account.password },
    ]) {
      const bad = await stack.http.post('/auth/login', body);
      expect(bad.status).toBe(401);
      expect(bad.body.error.code).toBe('INVALID_CREDENTIALS');
    }
  });

  it('logs out by clearing the cookie', async () => {
    const account = await signUp(stack.http);
    const res = await stack.http.get('/auth/logout', { cookie: account.cookie });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true });
    const cleared = res.headers.getSetCookie().find((c) => c.startsWith('mailroom_session='))!;
    expect(cleared).toMatch(/mailroom_session=;/);
    expect(cleared).toMatch(/expires=Thu, 01 Jan 1970/i);
  });

  it('ends the session on the server: a copy of the logged-out cookie answers 401, other sessions keep working', async () => {
    const account = await signUp(stack.http);
    const elsewhere = cookieFrom(await stack.http.post('/auth/login', { email: account.email, password: account.password }));
    expect((await stack.http.get('/users/@me', { cookie: account.cookie })).status).toBe(200);

    expect((await stack.http.get('/auth/logout', { cookie: account.cookie })).status).toBe(200);
    const stale = await stack.http.get('/users/@me', { cookie: account.cookie });
    expect(stale.status).toBe(401);
    expect(stale.body.error.code).toBe('UNAUTHORIZED');
    // The session+X-Project-Id path checks the same session.
    expect((await stack.http.get('/contacts', { cookie: account.cookie, headers: { 'X-Project-Id': crypto.randomUUID() } })).status).toBe(401);
    expect((await stack.http.get('/users/@me', { cookie: elsewhere })).status).toBe(200);
    // Logging out twice, or without any cookie, answers as before.
    expect((await stack.http.get('/auth/logout', { cookie: account.cookie })).body).toEqual({ success: true });
    expect((await stack.http.get('/auth/logout')).body).toEqual({ success: true });
  });

  it('answers 401 to user endpoints without a session, or with a forged one', async () => {
    expect((await stack.http.get('/users/@me')).status).toBe(401);
    const forged = await stack.http.get('/users/@me', { cookie: 'mailroom_session=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.bad' });
    expect(forged.status).toBe(401);
    expect(forged.body.error.code).toBe('UNAUTHORIZED');
  });

  it('lists no OAuth providers when none is configured', async () => {
    const res = await stack.http.get('/auth/oauth-config');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ providers: [] });
  });
});

describe('email verification', () => {
  it('mails a single-use token through SMTP that verifies the address', async () => {
    const account = await signUp(stack.http, 'verify-me@example.com');
    const mail = await smtp.waitFor((m) => m.envelopeTo.includes('verify-me@example.com'));
    expect(mail.parsed.subject).toBe('Verify your Mailroom email address');
    expect(mail.parsed.from?.text).toContain('accounts@mailroom.test');
    // The link opens the dashboard's page, which sends the token to POST /auth/verify-email.
    expect(mail.parsed.text).toContain(`http://mailroom.test/app/verify-email?token=${encodeURIComponent(tokenIn(mail))}`);
    const token = tokenIn(mail);

    const res = await stack.http.post('/auth/verify-email', { token });
    expect(res.status).toBe(200);
    expect(res.body.user.emailVerified).toBe(true);
    expect((await stack.http.get('/users/@me', { cookie: account.cookie })).body.emailVerified).toBe(true);

    const again = await stack.http.post('/auth/verify-email', { token });
    expect(again.status).toBe(400);
    expect(again.body.error.message).toMatch(/invalid, expired or already used/);
  });

  it('verifies through the link of earlier mails (GET /auth/verify-email) as well', async () => {
    await signUp(stack.http, 'link-click@example.com');
    const mail = await smtp.waitFor((m) => m.envelopeTo.includes('link-click@example.com'));
    const res = await stack.http.get(`/auth/verify-email?token=${encodeURIComponent(tokenIn(mail))}`);
    expect(res.status).toBe(200);
    expect(res.text).toContain('verified');
  });

  it('sends a new verification mail on request, and says when the address is already verified', async () => {
    const account = await signUp(stack.http, 'resend@example.com');
    await smtp.waitFor((m) => m.envelopeTo.includes('resend@example.com'));
    const res = await stack.http.post('/auth/request-verification', {}, { cookie: account.cookie });
    expect(res.status).toBe(200);
    expect(res.body.alreadyVerified).toBe(false);
    await eventually(() => expect(smtp.messages.filter((m) => m.envelopeTo.includes('resend@example.com'))).toHaveLength(2));
  });

  it('rejects expired tokens', async () => {
    await signUp(stack.http, 'expired@example.com');
    const mail = await smtp.waitFor((m) => m.envelopeTo.includes('expired@example.com'));
    await stack.orm.em.fork().execute(`update user_tokens set expires_at = now() - interval '1 second'`);
    expect((await stack.http.post('/auth/verify-email', { token: tokenIn(mail) })).status).toBe(400);
  });
});

describe('password reset', () => {
  it('mails a reset token; the reset changes the password, ends old sessions, and works once', async () => {
    const account = await signUp(stack.http, 'forgetful@example.com');
    const res = await stack.http.post('/auth/request-password-reset', { email: 'Forgetful@example.com' });
    expect(res.status).toBe(200);
    const mail = await smtp.waitFor((m) => m.envelopeTo.includes('forgetful@example.com') && m.parsed.subject === 'Reset your Mailroom password');
    const token = tokenIn(mail);
    // The link opens the dashboard's page, which takes the token from it.
    expect(mail.parsed.text).toContain(`/app/reset-password?token=${encodeURIComponent(token)}`);

    const reset = await stack.http.post('/auth/reset-password', { token, password: 'a brand new password' });
    expect(reset.status).toBe(200);
    expect((await stack.http.get('/users/@me', { cookie: account.cookie })).status).toBe(401);
    expect((await stack.http.post('/auth/login', { email: account.email, password: account.password })).status).toBe(401);
    expect((await stack.http.post('/auth/login', { email: account.email, password: 'a brand new password' })).status).toBe(200);

    const reuse = await stack.http.post('/auth/reset-password', { token, password: 'yet another password' });
    expect(reuse.status).toBe(400);
  });

  it('answers the same for unknown addresses and sends nothing', async () => {
    // Earlier tests' account mails all sent (or not) first, so any mail from here on is this request's.
    const earlier = new Set((await runsClosed(stack.temporal, accountMailRunsQuery())).map((r) => r.workflowId));
    const before = smtp.messages.length;
    const res = await stack.http.post('/auth/request-password-reset', { email: 'ghost@example.com' });
    expect(res.status).toBe(200);
    // The run this request started (the API starts one for every request, account or not) has
    // closed: whatever it was going to send has been sent.
    const [run] = await eventually(async () => {
      const runs = (await listRuns(stack.temporal, accountMailRunsQuery())).filter((r) => !earlier.has(r.workflowId));
      expect(runs).toHaveLength(1);
      return runs;
    });
    expect(await stack.temporal.workflow.getHandle(run.workflowId, run.runId).result()).toEqual({ issued: false, reason: 'NO_ACCOUNT' });
    expect(smtp.messages.filter((m) => m.envelopeTo.includes('ghost@example.com'))).toEqual([]);
    expect(smtp.messages.length).toBe(before);
  });

  it('does not accept a verification token as a reset token', async () => {
    await signUp(stack.http, 'mixup@example.com');
    const mail = await smtp.waitFor((m) => m.envelopeTo.includes('mixup@example.com'));
    expect((await stack.http.post('/auth/reset-password', { token: tokenIn(mail), password: 'sneaky password' })).status).toBe(400);
  });
});

describe('DISABLE_SIGNUPS', () => {
  it('refuses signups with 403 when set, and /config says so', async () => {
    const closed = await startTestStack({ worker: false, env: { DISABLE_SIGNUPS: 'true' } });
    try {
      const res = await closed.http.post('/auth/signup', { email: 'late@example.com', password: 'a fine password' });
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe('FORBIDDEN');
      expect((await closed.http.get('/config')).body.signups).toEqual({ enabled: false });
    } finally {
      await closed.stop();
    }
  });
});
