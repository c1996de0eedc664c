import { ApplicationFailure } from '@temporalio/activity';
import { MailDeliveryError } from '../mail/mailTransport';

/** A permanent SMTP refusal (5xx) must not be retried; everything else is, by the workflow's retry policy. */
export function rethrowMailFailure(err: unknown): never {
  if (err instanceof MailDeliveryError && err.permanent) {
    throw ApplicationFailure.nonRetryable(err.message, 'PermanentDeliveryFailure', { responseCode: err.responseCode });
  }
  throw err;
}
