/**
 * The error vocabulary of the API (contract section 2). Handlers throw an ApiError;
 * the error middleware turns it into the envelope. Nothing else builds error bodies.
 */
/**
 * Every `error.code` the API answers: contract 2's codes, then those of the features it adds
 * (uploads, SNS and Stripe callbacks, object storage). The API description's envelope lists them
 * as its enum, so a code is added here or not at all.
 */
export const ERROR_CODES = [
  'BAD_REQUEST',
  'INVALID_REQUEST_BODY',
  'UNAUTHORIZED',
  'INVALID_API_KEY',
  'BILLING_LIMIT_EXCEEDED',
  'FORBIDDEN',
  'PROJECT_DISABLED',
  'RESOURCE_NOT_FOUND',
  'CONTACT_NOT_FOUND',
  'TEMPLATE_NOT_FOUND',
  'CAMPAIGN_NOT_FOUND',
  'SEGMENT_NOT_FOUND',
  'WORKFLOW_NOT_FOUND',
  'DOMAIN_NOT_FOUND',
  'JOB_NOT_FOUND',
  'EMAIL_NOT_FOUND',
  'METHOD_NOT_ALLOWED',
  'CONFLICT',
  'IDEMPOTENCY_KEY_REUSED',
  'PAYLOAD_TOO_LARGE',
  'VALIDATION_ERROR',
  'RATE_LIMIT_EXCEEDED',
  'INTERNAL_SERVER_ERROR',
  'SERVICE_UNAVAILABLE',
  'INVALID_CREDENTIALS',
  'INVALID_SIGNATURE',
  'FILE_TOO_LARGE',
  'TOO_MANY_FILES',
  'EMPTY_FILE',
  'UNSUPPORTED_IMAGE_TYPE',
  'SVG_NOT_ALLOWED',
  'INVALID_IMAGE',
  'IMAGE_DIMENSIONS_TOO_LARGE',
  'PAYMENT_PROVIDER_ERROR',
  'OBJECT_STORAGE_UNAVAILABLE',
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

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
    readonly code: ErrorCode,
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

const notFoundCodes: Record<string, ErrorCode> = {
  contact: 'CONTACT_NOT_FOUND',
  template: 'TEMPLATE_NOT_FOUND',
  campaign: 'CAMPAIGN_NOT_FOUND',
  segment: 'SEGMENT_NOT_FOUND',
  workflow: 'WORKFLOW_NOT_FOUND',
  domain: 'DOMAIN_NOT_FOUND',
  job: 'JOB_NOT_FOUND',
  email: 'EMAIL_NOT_FOUND',
};

/** A resource of another project is reported exactly like a missing one. */
export function notFound(resource: string, id?: string): ApiError {
  const code = notFoundCodes[resource] ?? 'RESOURCE_NOT_FOUND';
  const label = resource.charAt(0).toUpperCase() + resource.slice(1);
  return new ApiError(404, code, id ? `${label} not found: ${id}` : `${label} not found`, {
    details: { resource, id: id ?? null },
  });
}
