/**
 * How Mailroom reads URLs an SNS message names: the signing certificate (SigningCertURL) and the
 * subscription confirmation (SubscribeURL). Injectable (ApiDeps.snsFetch) so tests can answer
 * with their own certificate instead of calling Amazon. Callers check the URL first
 * (isAmazonSnsUrl); this only fetches.
 */
export type SnsFetcher = (url: string) => Promise<string>;

const FETCH_TIMEOUT_MS = 10_000;
const MAX_RESPONSE_BYTES = 64 * 1024;

export const httpsSnsFetcher: SnsFetcher = async (url) => {
  // No redirects: a redirect could lead away from the host that was checked.
  const res = await fetch(url, { redirect: 'error', signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) });
  if (!res.ok) throw new Error(`GET ${new URL(url).host} answered ${res.status}`);
  const body = Buffer.from(await res.arrayBuffer());
  if (body.length > MAX_RESPONSE_BYTES) throw new Error(`GET ${new URL(url).host} answered more than ${MAX_RESPONSE_BYTES} bytes`);
  return body.toString('utf8');
};
