import http from 'node:http';
import https from 'node:https';
import tls from 'node:tls';
import { isIP } from 'node:net';
import { performance } from 'node:perf_hooks';
import { DnsTemporaryFailure, type DnsResolver } from '../dns/dnsResolver';
import { checkWebhookAddress, isMetadataHostname, type WebhookAddressPolicy } from './webhookAddressPolicy';
import { signWebhookBody, webhookSignatureHeader } from './webhookSignature';

/**
 * The HTTP client of WEBHOOK steps (contract section 12). One call makes one webhook request,
 * following redirects, and either returns the receiver's 2xx answer or throws a WebhookError that
 * says whether trying again later can help.
 *
 * Server-side request forgery is the risk here (a project member chooses the URL), so the address
 * connected to is the address checked: the host is resolved once per hop through the project's
 * DNS resolver (DNS_SERVERS), every answer is checked against the address policy, and the socket
 * is opened to that checked IP literal, never to the name (Node would resolve it again, and a
 * rebinding DNS server could answer differently the second time). The name still goes into the
 * Host header and, for HTTPS, into SNI and the certificate check. Each redirect hop is resolved and
 * checked the same way.
 */

export const webhookMethods = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;
export type WebhookMethod = (typeof webhookMethods)[number];

/**
 * Bounds of one request (see docs/guides/security-and-operations.md, "Outgoing webhooks: which
 * addresses a WEBHOOK step may call").
 */
export const webhookLimits = {
  maxRequestBodyBytes: 1024 * 1024,
  maxResponseBodyBytes: 64 * 1024,
  maxRedirects: 5,
  maxUrlLength: 4096,
  maxHeaders: 50,
  maxHeaderValueLength: 8192,
  defaultTimeoutMs: 10_000,
  maxTimeoutMs: 120_000,
} as const;

export interface WebhookRequest extends WebhookAddressPolicy {
  url: string;
  /** Default POST. */
  method?: WebhookMethod | Lowercase<WebhookMethod>;
  headers?: Record<string, string>;
  /** Sent as is (the caller serialises JSON); Content-Type defaults to application/json when a body is given. */
  body?: string | Buffer;
  /** The project's webhook secret; when given, every request carries X-Mailroom-Signature. */
  secret?: string;
  /** For the whole call: DNS, connection, every redirect hop and reading the answer. */
  timeoutMs?: number;
  /** The project's one resolver (lib/dns/dnsResolver.ts, honouring DNS_SERVERS). */
  resolver: DnsResolver;
  /** A CA trusted besides the system's roots (receivers on a private PKI; tests). */
  extraCaCertificate?: string | Buffer;
  /**
   * Kept-alive connections to reuse (an endpoint's delivery run sends many requests to one
   * receiver); without them each request opens and closes its own connection.
   */
  connections?: WebhookConnections;
}

/**
 * A pool of kept-alive connections for one caller's requests. The pools are keyed by the address
 * connected to, and that is always a checked IP literal (see sendOnce), so a reused connection
 * goes where a check allowed, whatever DNS answers later.
 */
export interface WebhookConnections {
  http: http.Agent;
  https: https.Agent;
  /** Closes every pooled connection. */
  close(): void;
}

export function createWebhookConnections(maxSockets: number): WebhookConnections {
  const options = { keepAlive: true, maxSockets, maxFreeSockets: maxSockets };
  const pools = { http: new http.Agent(options), https: new https.Agent(options) };
  return {
    ...pools,
    close() {
      pools.http.destroy();
      pools.https.destroy();
    },
  };
}

export interface WebhookResponse {
  status: number;
  /** Lower-case names; repeated headers joined with ", ". */
  headers: Record<string, string>;
  /** The answer as UTF-8 text, at most webhookLimits.maxResponseBodyBytes of it. */
  body: string;
  bodyTruncated: boolean;
  /** From the call until the answer was read, redirects included. */
  durationMs: number;
  /** The URL that gave this answer (after redirects). */
  finalUrl: string;
  /** The IP address the answer came from (the checked one). */
  address: string;
  redirects: number;
}

/**
 * - INVALID_REQUEST: the URL, method, headers or body cannot be sent (not retryable: the step's
 *   configuration has to change).
 * - ADDRESS_REFUSED: the host is, resolves to, or redirects to an address the policy refuses (not retryable).
 * - DNS_FAILURE: the name has no address (not retryable) or DNS could not answer now (retryable).
 * - NETWORK_ERROR: connection refused, reset, unreachable, malformed answer (retryable).
 * - TIMEOUT: the whole call took longer than timeoutMs (retryable).
 * - TLS_ERROR: the receiver's certificate is not valid for the name, or TLS could not be agreed (not retryable).
 * - HTTP_ERROR: a non-2xx answer; retryable for 5xx, 408 and 429, not for the other 4xx and 3xx.
 * - BAD_REDIRECT / TOO_MANY_REDIRECTS: a redirect that cannot be followed, or more than maxRedirects (not retryable).
 */
export type WebhookErrorKind =
  'INVALID_REQUEST' | 'ADDRESS_REFUSED' | 'DNS_FAILURE' | 'NETWORK_ERROR' | 'TIMEOUT' | 'TLS_ERROR' | 'HTTP_ERROR' | 'BAD_REDIRECT' | 'TOO_MANY_REDIRECTS';

export interface WebhookErrorDetails {
  /** The URL of the hop that failed. */
  url?: string;
  /** The IP address it failed on, when one was chosen. */
  address?: string;
  /** HTTP_ERROR: the receiver's answer. */
  response?: WebhookResponse;
  durationMs?: number;
  cause?: unknown;
}

export class WebhookError extends Error {
  readonly url?: string;
  readonly address?: string;
  readonly status?: number;
  readonly response?: WebhookResponse;
  durationMs?: number;

  constructor(
    readonly kind: WebhookErrorKind,
    message: string,
    /** Whether the same request may succeed later (Temporal retries it with backoff). */
    readonly retryable: boolean,
    details: WebhookErrorDetails = {},
  ) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.name = 'WebhookError';
    this.url = details.url;
    this.address = details.address;
    this.response = details.response;
    this.status = details.response?.status;
    this.durationMs = details.durationMs;
  }

  /** A plain object for step history and logs (no stack, no cause). */
  toJSON() {
    return {
      kind: this.kind,
      message: this.message,
      retryable: this.retryable,
      url: this.url,
      address: this.address,
      status: this.status,
      durationMs: this.durationMs,
    };
  }
}

const invalid = (message: string) => new WebhookError('INVALID_REQUEST', message, false);

/** RFC 9110 token: the characters a header name may have. */
const headerNamePattern = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** What Node accepts in a header value: no CR, LF, NUL or other controls besides tab; Latin-1 at most. */
const headerValuePattern = /^[\t\x20-\x7e\x80-\xff]*$/;
/** Headers the client sets itself: overriding them would break framing or the signature. */
const reservedHeaders = new Set([
  'host',
  'content-length',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'upgrade',
  'te',
  'trailer',
  'expect',
  'proxy-connection',
  webhookSignatureHeader.toLowerCase(),
]);
/** Credentials that must not follow a redirect to another origin (as fetch does). */
const credentialHeaders = new Set(['authorization', 'proxy-authorization', 'cookie']);

/**
 * The URL as a WEBHOOK step may use it: http or https, a host, no user:password part (put
 * credentials in a header), no control characters (WHATWG URL parsing would silently drop CR/LF
 * and tabs, so they are refused before parsing).
 */
export function parseWebhookUrl(raw: string): URL {
  if (typeof raw !== 'string' || !raw.trim()) throw invalid('The webhook URL is empty');
  if (raw.length > webhookLimits.maxUrlLength) throw invalid(`The webhook URL is longer than ${webhookLimits.maxUrlLength} characters`);
  if (/[\x00-\x1f\x7f]/.test(raw)) throw invalid('The webhook URL contains control characters (CR, LF, tab…)');
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    throw invalid(`The webhook URL "${raw.slice(0, 200)}" is not a valid absolute URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw invalid(`The webhook URL must be http or https, not ${url.protocol.replace(/:$/, '')}`);
  if (!url.hostname) throw invalid('The webhook URL has no host');
  if (url.port === '0') throw invalid('The webhook URL names port 0');
  if (url.username || url.password) throw invalid('The webhook URL must not carry a user name or password; send credentials in a header');
  return url;
}

/** Checks step headers: names are tokens, values single-line, none of the headers the client sets itself. */
export function checkWebhookHeaders(headers: Record<string, string> | undefined): void {
  if (headers === undefined) return;
  if (headers === null || typeof headers !== 'object' || Array.isArray(headers)) throw invalid('Webhook headers must be an object of strings');
  const entries = Object.entries(headers);
  if (entries.length > webhookLimits.maxHeaders) throw invalid(`At most ${webhookLimits.maxHeaders} webhook headers`);
  for (const [name, value] of entries) {
    if (!headerNamePattern.test(name)) throw invalid(`"${name.slice(0, 100)}" is not a valid header name`);
    if (reservedHeaders.has(name.toLowerCase())) throw invalid(`The ${name} header is set by Mailroom and cannot be configured`);
    if (typeof value !== 'string') throw invalid(`The value of header ${name} must be a string`);
    if (value.length > webhookLimits.maxHeaderValueLength)
      throw invalid(`The value of header ${name} is longer than ${webhookLimits.maxHeaderValueLength} characters`);
    if (!headerValuePattern.test(value)) {
      throw invalid(`The value of header ${name} contains CR, LF or other control characters, or characters beyond Latin-1`);
    }
  }
}

export async function sendWebhook(request: WebhookRequest): Promise<WebhookResponse> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const timeoutMs = request.timeoutMs ?? webhookLimits.defaultTimeoutMs;
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0 || timeoutMs > webhookLimits.maxTimeoutMs) {
    throw invalid(`timeoutMs must be between 1 and ${webhookLimits.maxTimeoutMs}`);
  }
  const method = String(request.method ?? 'POST').toUpperCase() as WebhookMethod;
  if (!webhookMethods.includes(method)) throw invalid(`Webhook method must be one of ${webhookMethods.join(', ')}`);
  let url = parseWebhookUrl(request.url);
  checkWebhookHeaders(request.headers);
  const body = request.body;
  if (body !== undefined && typeof body !== 'string' && !Buffer.isBuffer(body)) throw invalid('The webhook body must be a string');
  const bodyBytes = body === undefined ? 0 : Buffer.byteLength(body);
  if (bodyBytes > webhookLimits.maxRequestBodyBytes) {
    throw invalid(`The webhook body is ${bodyBytes} bytes; at most ${webhookLimits.maxRequestBodyBytes} are sent`);
  }
  if (method === 'GET' && bodyBytes > 0) throw invalid('A GET webhook carries no body; use POST, PUT, PATCH or DELETE to send one');

  const policy: WebhookAddressPolicy = { allowPrivate: request.allowPrivate, allowedNetworks: request.allowedNetworks };
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), timeoutMs);
  let hop: Hop = { method, headers: withDefaults(request.headers, body), body };
  let currentAddress: string | undefined;
  try {
    for (let redirects = 0; ; redirects++) {
      const addresses = await addressesOf(url, policy, request.resolver, abort.signal);
      const headers = request.secret ? { ...hop.headers, [webhookSignatureHeader]: signWebhookBody(hop.body ?? '', request.secret) } : hop.headers;
      const { response, address } = await connectAndSend(url, addresses, { ...hop, headers }, request, abort.signal, (a) => {
        currentAddress = a;
      });
      const status = response.statusCode ?? 0;
      const location = response.headers.location;
      if (redirectStatuses.has(status) && location) {
        response.destroy();
        if (redirects >= webhookLimits.maxRedirects) {
          throw new WebhookError('TOO_MANY_REDIRECTS', `More than ${webhookLimits.maxRedirects} redirects`, false, { url: url.href, address });
        }
        const next = redirectTarget(url, location);
        hop = redirectedHop(hop, status, url, next);
        url = next;
        continue;
      }
      const { text, truncated } = await readBounded(response, abort.signal);
      const answer: WebhookResponse = {
        status,
        headers: flattenHeaders(response.headers),
        body: text,
        bodyTruncated: truncated,
        durationMs: elapsed(),
        finalUrl: url.href,
        address,
        redirects,
      };
      if (status >= 200 && status < 300) return answer;
      const retryable = status >= 500 || status === 408 || status === 429;
      throw new WebhookError('HTTP_ERROR', `The receiver answered ${status}${response.statusMessage ? ` ${response.statusMessage}` : ''}`, retryable, {
        url: url.href,
        address,
        response: answer,
      });
    }
  } catch (err) {
    const error = err instanceof WebhookError ? err : classify(err, abort.signal, url.href, currentAddress, timeoutMs);
    error.durationMs ??= elapsed();
    throw error;
  } finally {
    clearTimeout(timer);
  }
}

interface Hop {
  method: WebhookMethod;
  headers: Record<string, string>;
  body: string | Buffer | undefined;
}

const redirectStatuses = new Set([301, 302, 303, 307, 308]);

function withDefaults(headers: Record<string, string> | undefined, body: string | Buffer | undefined): Record<string, string> {
  const out: Record<string, string> = { ...headers };
  const has = (name: string) => Object.keys(out).some((key) => key.toLowerCase() === name);
  if (!has('user-agent')) out['User-Agent'] = 'Mailroom-Webhook/1.0';
  if (body !== undefined && !has('content-type')) out['Content-Type'] = 'application/json';
  return out;
}

function redirectTarget(from: URL, location: string): URL {
  let next: URL;
  try {
    next = new URL(location, from);
  } catch {
    throw new WebhookError('BAD_REDIRECT', `The receiver redirected to "${location.slice(0, 200)}", which is not a URL`, false, { url: from.href });
  }
  try {
    return parseWebhookUrl(next.href);
  } catch (err) {
    throw new WebhookError('BAD_REDIRECT', `The receiver redirected to ${next.href.slice(0, 200)}: ${(err as Error).message}`, false, { url: from.href });
  }
}

/**
 * What the next hop sends, as fetch does it: 303 (and 301/302 after a POST) becomes a GET without
 * body; 307/308 repeat the request. Credentials stay with their origin.
 */
function redirectedHop(hop: Hop, status: number, from: URL, to: URL): Hop {
  const becomesGet = (status === 303 && hop.method !== 'GET') || ((status === 301 || status === 302) && hop.method === 'POST');
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(hop.headers)) {
    const lower = name.toLowerCase();
    if (becomesGet && lower === 'content-type') continue;
    if (from.origin !== to.origin && credentialHeaders.has(lower)) continue;
    headers[name] = value;
  }
  return becomesGet ? { method: 'GET', headers, body: undefined } : { ...hop, headers };
}

interface Candidate {
  address: string;
  family: 4 | 6;
}

/** The checked addresses of the URL's host; throws unless every one is allowed. */
async function addressesOf(url: URL, policy: WebhookAddressPolicy, resolver: DnsResolver, signal: AbortSignal): Promise<Candidate[]> {
  const host = hostOf(url);
  if (isMetadataHostname(host)) {
    throw new WebhookError('ADDRESS_REFUSED', `${host} is a cloud metadata service`, false, { url: url.href });
  }
  let candidates: Candidate[];
  const family = isIP(host);
  if (family) {
    candidates = [{ address: host, family: family as 4 | 6 }];
  } else if (host === 'localhost' || host.endsWith('.localhost')) {
    // RFC 6761: these names are loopback whatever DNS says, and the resolver does not read /etc/hosts.
    candidates = [
      { address: '127.0.0.1', family: 4 },
      { address: '::1', family: 6 },
    ];
  } else {
    candidates = await resolve(host, resolver, signal, url);
  }
  for (const candidate of candidates) {
    const verdict = checkWebhookAddress(candidate.address, policy);
    if (!verdict.allowed) {
      const via = family ? '' : `${host} resolves to `;
      throw new WebhookError('ADDRESS_REFUSED', `Refused: ${via}${verdict.reason}; webhooks may only call public addresses`, false, {
        url: url.href,
        address: candidate.address,
      });
    }
  }
  return candidates;
}

/** The host without IPv6 brackets or a trailing dot, lower case (WHATWG URL already lower-cased and punycoded it). */
function hostOf(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, '$1').replace(/\.$/, '');
}

async function resolve(host: string, resolver: DnsResolver, signal: AbortSignal, url: URL): Promise<Candidate[]> {
  const [a, aaaa] = await untilAborted(Promise.allSettled([resolver.a(host), resolver.aaaa(host)]), signal);
  // IPv4 first: more receivers are reachable over it than over IPv6 from a typical server.
  const candidates: Candidate[] = [
    ...(a.status === 'fulfilled' ? a.value.map((address) => ({ address, family: 4 as const })) : []),
    ...(aaaa.status === 'fulfilled' ? aaaa.value.map((address) => ({ address, family: 6 as const })) : []),
  ];
  if (candidates.length) return candidates;
  const failure = [a, aaaa].find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failure) {
    const reason = failure.reason;
    const message = reason instanceof DnsTemporaryFailure ? reason.message : `DNS lookup of ${host} failed: ${String(reason)}`;
    throw new WebhookError('DNS_FAILURE', message, true, { url: url.href, cause: reason });
  }
  throw new WebhookError('DNS_FAILURE', `${host} has no A or AAAA record`, false, { url: url.href });
}

/** Errors before the TCP connection exists: the next address of the host may work. */
const connectErrors = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL', 'EAFNOSUPPORT']);

async function connectAndSend(
  url: URL,
  candidates: Candidate[],
  hop: Hop,
  request: Pick<WebhookRequest, 'extraCaCertificate' | 'connections'>,
  signal: AbortSignal,
  onAddress: (address: string) => void,
): Promise<{ response: http.IncomingMessage; address: string }> {
  let lastError: unknown;
  for (const candidate of candidates) {
    onAddress(candidate.address);
    try {
      return { response: await sendOnce(url, candidate, hop, request, signal), address: candidate.address };
    } catch (err) {
      // A kept-alive connection the receiver closed as it was reused: once more, on a new one.
      if ((err as { staleConnection?: boolean }).staleConnection && !signal.aborted) {
        return { response: await sendOnce(url, candidate, hop, { ...request, connections: undefined }, signal), address: candidate.address };
      }
      lastError = err;
      const code = (err as NodeJS.ErrnoException).code;
      if (signal.aborted || !(err as { beforeConnect?: boolean }).beforeConnect || !connectErrors.has(code ?? '')) throw err;
    }
  }
  throw lastError;
}

function sendOnce(
  url: URL,
  candidate: Candidate,
  hop: Hop,
  request: Pick<WebhookRequest, 'extraCaCertificate' | 'connections'>,
  signal: AbortSignal,
): Promise<http.IncomingMessage> {
  const extraCa = request.extraCaCertificate;
  const secure = url.protocol === 'https:';
  const host = hostOf(url);
  const headers: Record<string, string> = { ...hop.headers, Host: url.host };
  if (hop.body !== undefined) headers['Content-Length'] = String(Buffer.byteLength(hop.body));
  else if (hop.method !== 'GET' && hop.method !== 'DELETE') headers['Content-Length'] = '0';
  const options: https.RequestOptions = {
    // The checked IP literal: Node connects to it without another lookup.
    host: candidate.address,
    family: candidate.family,
    port: url.port ? Number(url.port) : secure ? 443 : 80,
    method: hop.method,
    path: `${url.pathname}${url.search}`,
    headers,
    agent: request.connections ? (secure ? request.connections.https : request.connections.http) : false,
    signal,
  };
  if (secure) {
    // SNI and the certificate check are for the name in the URL (an IP literal is checked against the certificate's IP entries).
    if (!isIP(host)) options.servername = host;
    options.rejectUnauthorized = true;
    if (extraCa) options.ca = [...tls.rootCertificates, typeof extraCa === 'string' ? extraCa : extraCa.toString('utf8')];
  }
  return new Promise((resolvePromise, reject) => {
    let connected = false;
    const req = (secure ? https : http).request(options, resolvePromise);
    req.on('socket', (socket) => {
      if (req.reusedSocket) connected = true;
      else socket.once('connect', () => (connected = true));
    });
    req.on('error', (err) => {
      const code = (err as NodeJS.ErrnoException).code;
      // Node's advice for kept-alive connections: a reset before any answer on a reused one is the
      // receiver's idle timeout racing this request, not an answer.
      const staleConnection = req.reusedSocket && (code === 'ECONNRESET' || code === 'EPIPE');
      Object.assign(err, { beforeConnect: !connected, staleConnection });
      reject(err);
    });
    req.end(hop.body);
  });
}

function readBounded(response: http.IncomingMessage, signal: AbortSignal): Promise<{ text: string; truncated: boolean }> {
  const limit = webhookLimits.maxResponseBodyBytes;
  return new Promise((resolvePromise, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const finish = (truncated: boolean) => {
      if (settled) return;
      settled = true;
      signal.removeEventListener('abort', onAbort);
      // A cut multi-byte character at the end decodes as U+FFFD rather than failing.
      resolvePromise({ text: new TextDecoder('utf-8').decode(Buffer.concat(chunks)), truncated });
    };
    const onAbort = () => {
      if (settled) return;
      settled = true;
      response.destroy();
      reject(new DOMException('The operation was aborted', 'AbortError'));
    };
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    response.on('data', (chunk: Buffer) => {
      if (size + chunk.length > limit) {
        chunks.push(chunk.subarray(0, limit - size));
        size = limit;
        // The rest is not read: a receiver cannot make the worker download an unbounded answer.
        response.destroy();
        finish(true);
        return;
      }
      chunks.push(chunk);
      size += chunk.length;
    });
    response.on('end', () => finish(false));
    response.on('error', (err) => {
      if (settled) return;
      settled = true;
      signal.removeEventListener('abort', onAbort);
      reject(err);
    });
  });
}

function flattenHeaders(headers: http.IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined) out[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}

function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise((resolvePromise, reject) => {
    const onAbort = () => reject(new DOMException('The operation was aborted', 'AbortError'));
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolvePromise(value);
      },
      (err) => {
        signal.removeEventListener('abort', onAbort);
        reject(err);
      },
    );
  });
}

/** TLS failures that are about the receiver's certificate or configuration, not a passing network fault. */
function isTlsFailure(code: string | undefined, message: string): boolean {
  if (!code) return false;
  return (
    code.startsWith('ERR_TLS_') ||
    code.startsWith('ERR_SSL_') ||
    code === 'EPROTO' ||
    /CERT|SELF_SIGNED|UNABLE_TO_VERIFY|UNABLE_TO_GET_ISSUER/.test(code) ||
    /certificate/i.test(message)
  );
}

function classify(err: unknown, signal: AbortSignal, url: string, address: string | undefined, timeoutMs: number): WebhookError {
  if (signal.aborted) {
    return new WebhookError('TIMEOUT', `No complete answer within ${timeoutMs} ms`, true, { url, address, cause: err });
  }
  const code = (err as NodeJS.ErrnoException)?.code;
  const message = err instanceof Error ? err.message : String(err);
  if (isTlsFailure(code, message)) {
    return new WebhookError('TLS_ERROR', `TLS with ${url} failed: ${message}`, false, { url, address, cause: err });
  }
  return new WebhookError('NETWORK_ERROR', `Request to ${url}${address ? ` (${address})` : ''} failed: ${code ? `${code} ` : ''}${message}`, true, {
    url,
    address,
    cause: err,
  });
}
