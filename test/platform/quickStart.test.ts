import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startTestStack, type TestStack } from '../support/testStack';
import { startSmtpServer, type TestSmtpServer } from '../support/smtpServer';
import { accountWithProject, type TestProject } from '../support/accounts';
import { eventually } from '../support/eventually';
import { HttpClient } from '../support/http';
import { ShellSession, parseCurl, quickStartBlock, shellCommands, type CurlRequest } from '../support/quickStartScript';
import { startApiServer, type RunningApi } from '../../api/server';
import { OUTBOX_SENDER_DOMAIN } from '../../lib/domainName';

/**
 * The README's Quick start, walked as a new user walks it on `npm start`'s embedded defaults (no
 * SMTP_URL: mail goes to the local outbox): its own commands, run one by one in bash with curl and
 * node against a test stack. MAILROOM_QUICKSTART_DOC names another markdown file to take the
 * block from (the README text of a branch, before it is merged); README's own commands must then
 * be the first commands of that block, unchanged.
 */
const root = path.join(__dirname, '..', '..');
const readmePath = path.join(root, 'README.md');
const docPath = process.env.MAILROOM_QUICKSTART_DOC ?? readmePath;
const commands = shellCommands(quickStartBlock(fs.readFileSync(docPath, 'utf8'), docPath));
const parsedCommands = commands.map(parseCurl);
const requests = parsedCommands.filter((r): r is CurlRequest => r !== null);

const JSON_TYPE = { 'content-type': 'application/json' };
const bodyOf = (request: CurlRequest) => JSON.parse(request.data ?? 'null');
const keysOf = (request: CurlRequest) => Object.keys(bodyOf(request)).sort();

/** The steps the quick start is made of, in order: each one's request as README writes it. */
function quickStartSteps() {
  if (requests.length !== 7)
    throw new Error(
      `${docPath}'s Quick start has ${requests.length} curl commands; the walk knows 7: signup, project, track, contacts, the first /v1/send, GET /outbox, /outbox.html`,
    );
  const [signup, createProject, track, listContacts, send, outboxList, outboxPage] = requests;
  return { signup, createProject, track, listContacts, send, outboxList, outboxPage };
}

describe('the README quick start, as written', () => {
  it('is read from the same commands README has today', () => {
    if (docPath === readmePath) return;
    const readmeCommands = shellCommands(quickStartBlock(fs.readFileSync(readmePath, 'utf8'), readmePath));
    expect(commands.slice(0, readmeCommands.length)).toEqual(readmeCommands);
  });

  it('makes the requests of a first account, project, keys, contact, email and outbox', () => {
    expect(commands[0]).toBe('API=http://localhost:8080');
    const steps = quickStartSteps();

    expect(steps.signup).toMatchObject({ method: 'POST', url: '$API/auth/signup', headers: JSON_TYPE, assignedTo: null });
    expect(keysOf(steps.signup)).toEqual(['email', 'password']);
    const jar = steps.signup.cookieJarWritten;
    expect(jar).toBeTruthy();

    expect(steps.createProject).toMatchObject({
      method: 'POST',
      url: '$API/users/@me/projects',
      headers: JSON_TYPE,
      assignedTo: 'PROJECT',
      cookieJarSent: jar,
    });
    expect(keysOf(steps.createProject)).toEqual(['name']);
    // The keys are read from the project's answer.
    expect(commands).toContain(`PK=$(echo "$PROJECT" | node -p 'JSON.parse(require("fs").readFileSync(0, "utf8")).publicKey')`);
    expect(commands).toContain(`SK=$(echo "$PROJECT" | node -p 'JSON.parse(require("fs").readFileSync(0, "utf8")).secretKey')`);

    expect(steps.track).toMatchObject({ method: 'POST', url: '$API/v1/track', headers: { ...JSON_TYPE, authorization: 'Bearer $PK' } });
    expect(keysOf(steps.track)).toEqual(['data', 'email', 'event']);

    expect(steps.listContacts).toMatchObject({ method: 'GET', url: '$API/contacts?limit=10', headers: { authorization: 'Bearer $SK' }, data: null });

    expect(steps.send).toMatchObject({ method: 'POST', url: '$API/v1/send', headers: { ...JSON_TYPE, authorization: 'Bearer $SK' } });
    expect(keysOf(steps.send)).toEqual(['body', 'from', 'subject', 'to']);
    expect(bodyOf(steps.send).from).toMatch(new RegExp(`^[a-z0-9.+-]+@${OUTBOX_SENDER_DOMAIN.replace(/\./g, '\\.')}$`));
    // The first email goes to the contact the quick start tracked.
    expect(bodyOf(steps.send).to).toBe(bodyOf(steps.track).email);

    expect(steps.outboxList).toMatchObject({ method: 'GET', headers: { authorization: 'Bearer $SK' }, data: null });
    expect(steps.outboxList.url).toMatch(/^\$API\/outbox(\?limit=\d+)?$/);
    expect(steps.outboxPage).toMatchObject({ method: 'GET', url: '$API/outbox.html', headers: { authorization: 'Bearer $SK' }, data: null });
    expect(steps.outboxPage.output).toBeTruthy();
  });
});

describe('the README quick start, walked on embedded defaults (mail to the local outbox)', () => {
  let stack: TestStack;
  let dir: string;
  let shell: ShellSession;

  beforeAll(async () => {
    stack = await startTestStack();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mailroom-quickstart-'));
    // What a terminal has: PATH (curl, node), a home; no proxy and no curlrc of this machine's user.
    shell = new ShellSession(dir, { PATH: process.env.PATH, HOME: dir, CURL_HOME: dir, LANG: 'C.UTF-8' });
  });
  afterAll(async () => {
    await shell?.close();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
    await stack?.stop();
  });

  /** Runs one of the quick start's commands; it must succeed and write nothing to stderr. */
  async function run(command: string): Promise<string> {
    const result = await shell.run(command);
    if (result.status !== 0 || result.stderr) throw new Error(`${command}\nexited ${result.status}, stderr: ${result.stderr}`);
    return result.stdout;
  }

  it('every command works, and the first email is in the outbox from the built-in sender', async () => {
    const steps = quickStartSteps();
    const answers = new Map<CurlRequest, string>();
    let firstEmailId = '';

    for (const [index, command] of commands.entries()) {
      const request = parsedCommands[index];
      if (request === steps.outboxList) {
        // "A moment later": a reader waits for delivery (a workflow) before looking; so does the test.
        const key = await run(`printf '%s' "$SK"`);
        await eventually(async () => (await stack.http.get(`/emails/${firstEmailId}`, { key })).body.status === 'SENT', 60_000);
      }
      const stdout = await run(command);
      // The stack's port rather than 8080.
      if (command.startsWith('API=')) await run(`API=${stack.api.url}`);
      if (request) answers.set(request, stdout);
      if (request === steps.send) firstEmailId = JSON.parse(stdout).data.emails[0].email;
    }

    const secretKey = await run(`printf '%s' "$SK"`);
    expect(secretKey).toMatch(/^sk_/);
    expect(await run(`printf '%s' "$PK"`)).toMatch(/^pk_/);
    const projectId = JSON.parse(await run(`printf '%s' "$PROJECT"`)).id;

    const signup = JSON.parse(answers.get(steps.signup)!);
    expect(signup).toMatchObject({ user: { email: bodyOf(steps.signup).email }, verificationEmailSent: true });
    expect(fs.readFileSync(path.join(dir, steps.signup.cookieJarWritten!), 'utf8')).toContain('mailroom_session');
    expect(answers.get(steps.createProject)).toBe('');

    const tracked = bodyOf(steps.track);
    expect(JSON.parse(answers.get(steps.track)!)).toMatchObject({ success: true, data: { contact: expect.any(String), event: expect.any(String) } });
    const contacts = JSON.parse(answers.get(steps.listContacts)!);
    expect(contacts).toMatchObject({ data: [{ email: tracked.email, data: tracked.data }], total: 1, hasMore: false });

    const sent = bodyOf(steps.send);
    expect(JSON.parse(answers.get(steps.send)!)).toMatchObject({
      success: true,
      data: { emails: [{ contact: { id: contacts.data[0].id, email: sent.to }, email: firstEmailId }] },
    });

    // The outbox holds it as it would have left: From, To and subject; Message-ID on the sender's
    // domain; no DKIM-Signature, as the built-in domain has no key (docs/decisions.md, "The local
    // outbox sender domain").
    const outbox = JSON.parse(answers.get(steps.outboxList)!);
    expect(outbox.data).toHaveLength(1);
    expect(outbox.data[0]).toMatchObject({ from: sent.from, to: [sent.to], subject: sent.subject });
    expect(outbox.data[0].messageId).toBe(`<${firstEmailId}@${OUTBOX_SENDER_DOMAIN}>`);
    const raw = await stack.http.get(`/outbox/${outbox.data[0].id}/raw`, { key: secretKey });
    expect(raw.status).toBe(200);
    expect(raw.text).toMatch(new RegExp(`^From: ${sent.from}\\r$`, 'm'));
    expect(raw.text).toMatch(new RegExp(`^To: ${sent.to}\\r$`, 'm'));
    expect(raw.text).not.toMatch(/^DKIM-Signature:/im);

    const page = fs.readFileSync(path.join(dir, steps.outboxPage.output!), 'utf8');
    expect(page).toContain('<h1>Outbox</h1>');
    expect(page).toContain(sent.subject);
    const pageAnswer = await stack.http.get('/outbox.html', { key: secretKey });
    expect(pageAnswer.status).toBe(200);
    expect(pageAnswer.headers.get('content-type')).toContain('text/html');

    // The built-in sender is not a domain record of the project, and GET /config names it.
    const domains = await stack.http.get(`/domains/project/${projectId}`, { key: secretKey });
    expect(domains.status).toBe(200);
    expect(domains.body).toEqual([]);
    expect((await stack.http.get('/config')).body.localOutbox).toEqual({ enabled: true, senderDomain: OUTBOX_SENDER_DOMAIN });
  }, 120_000);
});

describe('the outbox sender domain once SMTP_URL is set', () => {
  let sink: TestSmtpServer;
  // The API in outbox mode, the worker with SMTP_URL: what a restart with SMTP_URL meets in the queue.
  let stack: TestStack;
  // A second API with SMTP_URL on the same database: what a new user meets once mail goes out.
  let smtpApi: RunningApi;
  let smtpHttp: HttpClient;
  let project: TestProject;

  beforeAll(async () => {
    sink = await startSmtpServer();
    stack = await startTestStack({ env: { SMTP_URL: sink.url }, apiEnv: { SMTP_URL: '' } });
    smtpApi = await startApiServer(stack.config, stack.logger, { host: '127.0.0.1', eventTriggers: stack.eventTriggers });
    smtpHttp = new HttpClient(smtpApi.url);
    ({ project } = await accountWithProject(stack.http));
  });
  afterAll(async () => {
    await smtpApi?.close();
    await stack?.stop();
    await sink?.close();
  });

  const firstEmail = { from: `hello@${OUTBOX_SENDER_DOMAIN}`, to: 'ada@example.com', subject: 'Your first email', body: '<p>Hello</p>' };

  it('is refused with the unverified-domain answer (403 INTERNAL_SERVER_ERROR naming the domain)', async () => {
    for (const from of [firstEmail.from, `news@eu.${OUTBOX_SENDER_DOMAIN}`, `Hello@${OUTBOX_SENDER_DOMAIN.toUpperCase()}`]) {
      const res = await smtpHttp.post('/v1/send', { ...firstEmail, from }, { key: project.secretKey });
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe('INTERNAL_SERVER_ERROR');
      expect(res.body.error.message).toContain(from.slice(from.indexOf('@') + 1).toLowerCase());
    }
    // Templates and campaigns ask the same rule.
    const template = await smtpHttp.post(
      '/templates',
      { name: 'Welcome', subject: 'Hi', body: '<p>Hi</p>', from: firstEmail.from, type: 'TRANSACTIONAL' },
      { key: project.secretKey },
    );
    expect(template.status).toBe(403);
    expect(template.body.error.message).toContain(OUTBOX_SENDER_DOMAIN);
    expect((await smtpHttp.get('/config')).body.localOutbox).toEqual({ enabled: false, senderDomain: null });
  });

  it('fails mail accepted in outbox mode that a worker with SMTP_URL would deliver: it never reaches the relay', async () => {
    const accepted = await stack.http.post('/v1/send', firstEmail, { key: project.secretKey });
    expect(accepted.status).toBe(200);
    const emailId = accepted.body.data.emails[0].email;
    // Its delivery's outcome, whichever it is (QUEUED and SENDING are not outcomes).
    const email = await eventually(async () => {
      const res = await stack.http.get(`/emails/${emailId}`, { key: project.secretKey });
      return ['QUEUED', 'SENDING'].includes(res.body.status) ? false : res.body;
    }, 60_000);
    expect(email.status).toBe('FAILED');
    expect(email.error).toContain(`${OUTBOX_SENDER_DOMAIN} sends only into the local outbox, and SMTP_URL is set`);
    // Refused before the transport was asked: the FAILED outcome is recorded after any hand-over.
    expect(sink.messages.filter((m) => m.envelopeTo.includes(firstEmail.to))).toEqual([]);
  }, 120_000);

  it('cannot be added as a domain, in either mode', async () => {
    for (const http of [stack.http, smtpHttp]) {
      for (const domain of [OUTBOX_SENDER_DOMAIN, `mail.${OUTBOX_SENDER_DOMAIN}`]) {
        const res = await http.post('/domains', { domain }, { key: project.secretKey });
        expect(res.status).toBe(422);
        expect(JSON.stringify(res.body)).toContain(`${OUTBOX_SENDER_DOMAIN} is Mailroom's built-in sender of the local outbox`);
      }
    }
  });
});
