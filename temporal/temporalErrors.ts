/**
 * Tells a Temporal outage (retry later) from a refusal that retrying cannot fix (a missing
 * search attribute, namespace or permission): the first is a 503 and a wait, the second a 500
 * and a message for the operator.
 */

/** gRPC status codes (https://grpc.github.io/grpc/core/md_doc_statuscodes.html); stable by spec. */
const status = {
  INVALID_ARGUMENT: 3,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  PERMISSION_DENIED: 7,
  FAILED_PRECONDITION: 9,
  OUT_OF_RANGE: 11,
  UNIMPLEMENTED: 12,
  UNAUTHENTICATED: 16,
} as const;

/** The gRPC status code on the error or anywhere along its `cause` chain. */
export function grpcStatusOf(err: unknown): number | undefined {
  for (let e = err, depth = 0; e && typeof e === 'object' && depth < 10; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'number') return code;
  }
  return undefined;
}

/** Refusals that stay refusals however often the same request is repeated. */
const PERMANENT = new Set<number>([
  status.INVALID_ARGUMENT,
  status.NOT_FOUND,
  status.ALREADY_EXISTS,
  status.PERMISSION_DENIED,
  status.FAILED_PRECONDITION,
  status.OUT_OF_RANGE,
  status.UNIMPLEMENTED,
  status.UNAUTHENTICATED,
]);

/** True when the error says Temporal refused the request itself, so a retry would get the same answer. */
export function isPermanentTemporalError(err: unknown): boolean {
  const code = grpcStatusOf(err);
  return code !== undefined && PERMANENT.has(code);
}

/**
 * A refusal because the namespace has no mapping for one of the request's search attributes
 * (INVALID_ARGUMENT "Namespace <ns> has no mapping defined for search attribute <name>"): what a
 * frontend answers until a just-registered attribute reaches its namespace cache.
 */
export function isUnknownSearchAttribute(err: unknown): boolean {
  return (
    grpcStatusOf(err) === status.INVALID_ARGUMENT &&
    /no mapping defined for search attribute|search attribute \S+ is not defined|invalid search attribute/i.test(temporalErrorReason(err))
  );
}

export function isPermissionDenied(err: unknown): boolean {
  const code = grpcStatusOf(err);
  return code === status.PERMISSION_DENIED || code === status.UNIMPLEMENTED;
}

export function isNotFound(err: unknown): boolean {
  return grpcStatusOf(err) === status.NOT_FOUND || (err as Error)?.name === 'NamespaceNotFoundError';
}

/** The deepest message along the cause chain: the server's own words rather than a wrapper's. */
export function temporalErrorReason(err: unknown): string {
  let reason = err instanceof Error ? err.message : String(err);
  for (let e = (err as { cause?: unknown })?.cause, depth = 0; e && depth < 10; e = (e as { cause?: unknown }).cause, depth++) {
    const details = (e as { details?: unknown }).details;
    if (typeof details === 'string' && details) reason = details;
    else if (e instanceof Error && e.message) reason = e.message;
  }
  return reason;
}
