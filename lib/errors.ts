/**
 * The error vocabulary of the API (contract section 2). Handlers throw an ApiError;
 * the error middleware turns it into the envelope. Nothing else builds error bodies.
 */
export interface FieldError {
  field: string;
  message: string;
  code: string;
  received?: unknown;
}

export interface ApiErrorOptions {
  details?: Record<string, unknown>;
  errors?: FieldError[];
  suggestion?: string;
  headers?: Record<string, string>;
  /** Answer `{ error: message }` instead of the envelope (the spec's plain 400s). */
  plain?: boolean;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly options: ApiErrorOptions = {},
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

export const badRequest = (message: string, options?: ApiErrorOptions) => new ApiError(400, 'BAD_REQUEST', message, options);

/** The spec's plain `{ error }` body, used only where it shows one (POST /contacts, /templates, /segments). */
export const plainBadRequest = (message: string) => new ApiError(400, 'BAD_REQUEST', message, { plain: true });

export const invalidJson = () => new ApiError(400, 'INVALID_REQUEST_BODY', 'Invalid JSON in request body');

export const unauthorized = (message = 'Authentication required') => new ApiError(401, 'UNAUTHORIZED', message);

export const invalidApiKey = (message = 'Invalid API key') => new ApiError(401, 'INVALID_API_KEY', message);

export const forbidden = (message = 'You do not have permission to do this') => new ApiError(403, 'FORBIDDEN', message);

export const conflict = (message: string, details?: Record<string, unknown>) => new ApiError(409, 'CONFLICT', message, { details });

export const validationFailed = (errors: FieldError[]) => new ApiError(422, 'VALIDATION_ERROR', 'Request validation failed', { errors });

export const payloadTooLarge = (message = 'Request body is too large') => new ApiError(413, 'PAYLOAD_TOO_LARGE', message);

const notFoundCodes = {
  contact: 'CONTACT_NOT_FOUND',
  template: 'TEMPLATE_NOT_FOUND',
  campaign: 'CAMPAIGN_NOT_FOUND',
  segment: 'SEGMENT_NOT_FOUND',
  workflow: 'WORKFLOW_NOT_FOUND',
  domain: 'DOMAIN_NOT_FOUND',
  job: 'JOB_NOT_FOUND',
  email: 'EMAIL_NOT_FOUND',
} as const;

/** A resource of another project is reported exactly like a missing one. */
export function notFound(resource: string, id?: string): ApiError {
  const code = (notFoundCodes as Record<string, string>)[resource] ?? 'RESOURCE_NOT_FOUND';
  const label = resource.charAt(0).toUpperCase() + resource.slice(1);
  return new ApiError(404, code, id ? `${label} not found: ${id}` : `${label} not found`, {
    details: { resource, id: id ?? null },
  });
}
