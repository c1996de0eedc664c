import { createMailroomClient, type MailroomClient } from '../../../client/mailroomClient';

/**
 * The dashboard calls the API as every client does (contract 21): the typed client generated from
 * the API description, on the page's own origin, with the session cookie the browser sends by
 * itself. No key is ever given to it: the dashboard holds no secret key.
 */

/** Account and project-management routes (the session alone). */
export const sessionClient: MailroomClient = createMailroomClient({ baseUrl: '' });

const projectClients = new Map<string, MailroomClient>();

/** Project-scoped routes: the session plus `X-Project-Id`. One client per project, made once. */
export function projectClient(projectId: string): MailroomClient {
  let client = projectClients.get(projectId);
  if (!client) {
    client = createMailroomClient({ baseUrl: '', projectId });
    projectClients.set(projectId, client);
  }
  return client;
}

/** One field the API refused (a 422's `errors` items), by the body's field name. */
export interface FieldError {
  field: string;
  message: string;
}

/** An answer that was not a success, as the dashboard shows it: the API's message and the request id to quote. */
export class ApiError extends Error {
  constructor(
    message: string,
    /** The HTTP status; 0 when the API could not be reached. */
    readonly status: number,
    readonly code: string | undefined,
    readonly requestId: string | undefined,
    readonly fieldErrors: FieldError[] = [],
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

/** The error envelope (`{ error: { code, message, requestId, errors } }`), or the specification's plain `{ error: "…" }`. */
function apiErrorFrom(response: Response, body: unknown): ApiError {
  const headerId = response.headers.get('X-Request-ID') ?? undefined;
  const error = isRecord(body) ? body.error : undefined;
  if (isRecord(error)) {
    const items = Array.isArray(error.errors) ? error.errors : [];
    const fieldErrors = items
      .filter(isRecord)
      .flatMap((item) => (typeof item.field === 'string' && typeof item.message === 'string' ? [{ field: item.field, message: item.message }] : []));
    return new ApiError(
      typeof error.message === 'string' ? error.message : `The API answered ${response.status}`,
      response.status,
      typeof error.code === 'string' ? error.code : undefined,
      typeof error.requestId === 'string' ? error.requestId : headerId,
      fieldErrors,
    );
  }
  if (typeof error === 'string') return new ApiError(error, response.status, undefined, headerId);
  return new ApiError(`The API answered ${response.status} ${response.statusText}`.trim(), response.status, undefined, headerId);
}

/**
 * The body of a successful answer; any other answer (or no answer) throws an ApiError.
 *
 *   const user = await unwrap(sessionClient.GET('/users/@me'));
 */
export async function unwrap<Data>(request: Promise<{ data?: Data; error?: unknown; response: Response }>): Promise<Data> {
  let result: { data?: Data; error?: unknown; response: Response };
  try {
    result = await request;
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    throw new ApiError(`Could not reach the Mailroom API (${reason}). Check that it is running.`, 0, undefined, undefined);
  }
  if (!result.response.ok) throw apiErrorFrom(result.response, result.error);
  return result.data as Data;
}
