import { ApiError } from '../../lib/errors';
import { WorkflowStartError } from '../../temporal/startWorkflow';

/** The HTTP answer for a failed start: 503 with `retryMessage` for an outage, else a 500. */
export function workflowStartApiError(err: unknown, retryMessage: string): ApiError {
  if (err instanceof WorkflowStartError && !err.retryable) {
    return new ApiError(
      500,
      'INTERNAL_SERVER_ERROR',
      'Temporal refused to start the workflow; the server operator must fix the Temporal setup (the reason is in the API log)',
    );
  }
  return new ApiError(503, 'SERVICE_UNAVAILABLE', retryMessage);
}
