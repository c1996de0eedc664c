import crypto from 'node:crypto';
import type { HttpClient } from './http';

export interface TestAccount {
  email: string;
  password: string;
  userId: string;
  cookie: string;
}

export interface TestProject {
  id: string;
  name: string;
  publicKey: string;
  secretKey: string;
}

// Through the typed client (client/): a change of these answers' shape breaks the tests' build.

export async function signUp(http: HttpClient, email = `user-${crypto.randomBytes(4).toString('hex')}@example.com`): Promise<TestAccount> {
  const password = 'correct horse battery';
  const { data, response } = await http.typed().POST('/auth/signup', { body: { email, password } });
  if (response.status !== 201 || !data) throw new Error(`signup failed: ${response.status} ${await response.clone().text()}`);
  return { email, password, userId: data.user.id, cookie: sessionCookieOf(response) };
}

export async function createProject(http: HttpClient, account: TestAccount, name = 'Test project'): Promise<TestProject> {
  const { data, response } = await http.typed({ cookie: account.cookie }).POST('/users/@me/projects', { body: { name } });
  if (response.status !== 201 || !data) throw new Error(`project creation failed: ${response.status} ${await response.clone().text()}`);
  return { id: data.id, name: data.name, publicKey: data.publicKey, secretKey: data.secretKey };
}

function sessionCookieOf(response: Response): string {
  const found = response.headers.getSetCookie().find((c) => c.startsWith('mailroom_session='));
  if (!found) throw new Error(`no mailroom_session cookie in the answer (status ${response.status})`);
  return found.split(';')[0];
}

/** A new account with one project: the usual starting point of an API test. */
export async function accountWithProject(http: HttpClient) {
  const account = await signUp(http);
  const project = await createProject(http, account);
  return { account, project };
}

/** Sets a project's four monthly caps (contract 17; null = no cap) as its owner would, and expects 200. */
export async function setBillingLimits(
  http: HttpClient,
  account: TestAccount,
  project: TestProject,
  limits: { transactional?: number | null; campaigns?: number | null; workflows?: number | null; inbound?: number | null },
): Promise<void> {
  const res = await http.put(
    `/users/@me/projects/${project.id}/billing-limits`,
    { transactional: null, campaigns: null, workflows: null, inbound: null, ...limits },
    { cookie: account.cookie },
  );
  if (res.status !== 200) throw new Error(`billing limits not set: ${res.status} ${res.text}`);
}
