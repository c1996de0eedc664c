import crypto from 'node:crypto';
import { cookieFrom, type HttpClient } from './http';

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

export async function signUp(http: HttpClient, email = `user-${crypto.randomBytes(4).toString('hex')}@example.com`): Promise<TestAccount> {
  const password = 'correct horse battery';
  const res = await http.post('/auth/signup', { email, password });
  if (res.status !== 201) throw new Error(`signup failed: ${res.status} ${res.text}`);
  return { email, password, userId: res.body.user.id, cookie: cookieFrom(res) };
}

export async function createProject(http: HttpClient, account: TestAccount, name = 'Test project'): Promise<TestProject> {
  const res = await http.post('/users/@me/projects', { name }, { cookie: account.cookie });
  if (res.status !== 201) throw new Error(`project creation failed: ${res.status} ${res.text}`);
  return { id: res.body.id, name: res.body.name, publicKey: res.body.publicKey, secretKey: res.body.secretKey };
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
