import crypto from 'node:crypto';
import type { TestStack } from './testStack';
import type { TestProject } from './accounts';
import type { ReceivedRequest } from './webhookReceiver';

/** An outbound webhook endpoint made through the API (contract 18), with its secret as created. */
export interface TestEndpoint {
  id: string;
  secret: string;
  url: string;
}

export async function createEndpoint(stack: TestStack, project: TestProject, url: string, events: string[] = ['*']): Promise<TestEndpoint> {
  const res = await stack.http.post('/webhook-endpoints', { url, events }, { key: project.secretKey });
  if (res.status !== 201) throw new Error(`endpoint creation failed: ${res.status} ${res.text}`);
  return { id: res.body.id, secret: res.body.secret, url };
}

/**
 * Checks a request's signatures the way a receiver would with a dozen lines of HMAC (contract 18):
 * true when one of the space-separated `v1,` signatures is the HMAC of `id.timestamp.body` with `secret`.
 */
export function signedWith(request: ReceivedRequest, secret: string): boolean {
  const id = String(request.headers['webhook-id']);
  const timestamp = String(request.headers['webhook-timestamp']);
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  const expected = crypto.createHmac('sha256', key).update(`${id}.${timestamp}.${request.body}`).digest('base64');
  return String(request.headers['webhook-signature'] ?? '')
    .split(' ')
    .some((sig) => sig === `v1,${expected}`);
}
