import type { Middleware } from 'openapi-fetch';
import { ApiDescriptionMismatch, responseCheckerFor } from './apiDescriptionCheck';
import { createMailroomClient, type MailroomClient } from '../../client/mailroomClient';

export interface HttpResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export interface RequestOptions {
  body?: unknown;
  /** Sent as is (not JSON-encoded). */
  rawBody?: string | Buffer;
  headers?: Record<string, string>;
  /** Bearer API key. */
  key?: string;
  /** Session cookie value (`mailroom_session=…`). */
  cookie?: string;
}

/** Real HTTP against the API under test, with the JSON and cookie plumbing tests would otherwise repeat. */
export class HttpClient {
  /** `checkResponses: false` for a test that is about a response the description cannot hold (a proxy's, a broken server's). */
  constructor(
    readonly baseUrl: string,
    private readonly options: { checkResponses?: boolean } = {},
  ) {}

  async request<T = any>(method: string, path: string, options: RequestOptions = {}): Promise<HttpResponse<T>> {
    const headers: Record<string, string> = { ...(options.headers ?? {}) };
    if (options.key) headers.Authorization = `Bearer ${options.key}`;
    // A script's call, as the dashboard's: the API refuses a change by session cookie without a JSON body or this header (contract 21).
    if (options.cookie) {
      headers.Cookie = options.cookie;
      headers['X-Requested-With'] ??= 'XMLHttpRequest';
    }
    let body: string | Buffer | undefined;
    if (options.rawBody !== undefined) body = options.rawBody;
    else if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers['Content-Type'] ??= 'application/json';
    }
    const res = await fetch(this.baseUrl + path, { method, headers, body, redirect: 'manual' });
    const text = await res.text();
    let parsed: unknown = text;
    if ((res.headers.get('content-type') ?? '').includes('json') && text) parsed = JSON.parse(text);
    if (this.options.checkResponses !== false) {
      const checker = await responseCheckerFor(this.baseUrl);
      const problem = checker?.problem(method, path, res.status, res.headers.get('content-type'), parsed, text);
      if (problem) throw new ApiDescriptionMismatch(problem);
    }
    return { status: res.status, headers: res.headers, body: parsed as T, text };
  }

  /**
   * The typed client (client/, generated from the API description) against this API, its
   * responses checked against the served description like every other request here.
   */
  typed(auth: { key?: string; cookie?: string; projectId?: string } = {}): MailroomClient {
    const checkResponses: Middleware = {
      onResponse: async ({ request, response }) => {
        if (this.options.checkResponses === false) return undefined;
        const text = await response.clone().text();
        let parsed: unknown = text;
        if ((response.headers.get('content-type') ?? '').includes('json') && text) parsed = JSON.parse(text);
        const checker = await responseCheckerFor(this.baseUrl);
        const url = new URL(request.url);
        const problem = checker?.problem(request.method, url.pathname + url.search, response.status, response.headers.get('content-type'), parsed, text);
        if (problem) throw new ApiDescriptionMismatch(problem);
        return undefined;
      },
    };
    return createMailroomClient({ baseUrl: this.baseUrl, ...auth, middleware: [checkResponses] });
  }

  get<T = any>(path: string, options?: RequestOptions) {
    return this.request<T>('GET', path, options);
  }
  post<T = any>(path: string, body?: unknown, options: RequestOptions = {}) {
    return this.request<T>('POST', path, { ...options, body });
  }
  patch<T = any>(path: string, body?: unknown, options: RequestOptions = {}) {
    return this.request<T>('PATCH', path, { ...options, body });
  }
  put<T = any>(path: string, body?: unknown, options: RequestOptions = {}) {
    return this.request<T>('PUT', path, { ...options, body });
  }
  delete<T = any>(path: string, options: RequestOptions = {}) {
    return this.request<T>('DELETE', path, options);
  }
}

/** `name=value` of the Set-Cookie header named `name`, ready to send back. */
export function cookieFrom(res: HttpResponse, name = 'mailroom_session'): string {
  const setCookies = res.headers.getSetCookie();
  const found = setCookies.find((c) => c.startsWith(`${name}=`));
  if (!found) throw new Error(`no ${name} cookie in response (status ${res.status})`);
  return found.split(';')[0];
}
