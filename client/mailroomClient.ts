import createClient, { type Client, type Middleware } from 'openapi-fetch';
import type { paths } from './apiTypes';

/**
 * The typed client of the Mailroom API: openapi-fetch over the types openapi-typescript generated
 * from the API description (client/apiTypes.ts, `npm run openapi`). Paths, parameters, bodies and
 * answers are checked by the compiler, so a response that changes shape breaks its callers' build.
 *
 *   const mailroom = createMailroomClient({ baseUrl: 'http://localhost:8080', key: process.env.MAILROOM_SECRET_KEY });
 *   const { data, error } = await mailroom.POST('/v1/send', { body: { to: 'ada@example.com', subject: 'Hi', body: '<p>Hi</p>' } });
 *
 * In a browser on Mailroom's own origin (the dashboard), leave `key` out: the session cookie goes
 * with every request, and `projectId` names the project (X-Project-Id).
 */
export interface MailroomClientOptions {
  baseUrl: string;
  /** A project key: `sk_…` (server side) or `pk_…` (/v1/track only). */
  key?: string;
  /** With a session: the project a key-authenticated route acts on. */
  projectId?: string;
  /** A `mailroom_session=…` cookie, where the runtime does not keep cookies itself (Node). */
  cookie?: string;
  fetch?: typeof fetch;
  middleware?: Middleware[];
}

export type MailroomClient = Client<paths>;
export type { paths, components, operations } from './apiTypes';

export function createMailroomClient(options: MailroomClientOptions): MailroomClient {
  const headers: Record<string, string> = {};
  if (options.key) headers.Authorization = `Bearer ${options.key}`;
  if (options.projectId) headers['X-Project-Id'] = options.projectId;
  if (options.cookie) headers.Cookie = options.cookie;
  // With a session instead of a key, the API takes a change only from a call a cross-site form
  // could not make: a JSON body or this header (contract 21). Sent on every session call, so a
  // call without a body (regenerating keys, removing a member) is not forgotten.
  if (!options.key) headers['X-Requested-With'] = 'XMLHttpRequest';
  const client = createClient<paths>({
    baseUrl: options.baseUrl,
    headers,
    credentials: 'same-origin',
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
  for (const middleware of options.middleware ?? []) client.use(middleware);
  return client;
}
