import Router from '@koa/router';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { ApiDeps, AppContext, AppState } from '../state';
import { ApiError, badRequest, forbidden } from '../../lib/errors';
import { readDecodedBody } from '../http/bodyDecoding';
import { httpsSnsFetcher } from '../../mail/sns/snsFetcher';
import {
  isAmazonSnsUrl,
  parseSnsMessage,
  SnsCertificateUnavailable,
  SnsMessageError,
  SnsSignatureError,
  SnsVerifier,
  type SnsMessage,
} from '../../mail/sns/snsSignature';
import { parseSesNotification, type SesNotification } from '../../mail/sns/sesNotification';
import { emailFeedbackRepository } from '../../db/emails/emailFeedbackRepository';

/** SNS messages are at most 256 KB. */
const SNS_BODY_LIMIT_BYTES = 256 * 1024;

/**
 * `POST /webhooks/sns`: Amazon SES feedback delivered by SNS (contract section 9). Every message
 * is signature-checked before anything is read from it; a forged one answers 403 and changes
 * nothing. Subscriptions are confirmed by fetching their SubscribeURL (an SNS host only).
 * Notices about unknown emails, and SES event types Mailroom does not act on, answer 200 so SNS
 * does not retry them. Effects are idempotent (see emailFeedbackRepository), so SNS's
 * at-least-once delivery and replays change nothing twice.
 */
export function snsWebhookRoutes(deps: ApiDeps) {
  const router = new Router<AppState>();
  const fetcher = deps.snsFetch ?? httpsSnsFetcher;
  const verifier = new SnsVerifier(fetcher);

  /** SNS posts JSON as text/plain; a JSON content type was already parsed by jsonBody. */
  async function readMessage(ctx: AppContext): Promise<SnsMessage> {
    let value = ctx.request.body;
    if (value === undefined) {
      const raw = await readDecodedBody(ctx.req, SNS_BODY_LIMIT_BYTES);
      try {
        value = JSON.parse(raw.toString('utf8'));
      } catch {
        throw badRequest('The body is not an SNS message: it is not JSON');
      }
    }
    try {
      return parseSnsMessage(value);
    } catch (err) {
      if (err instanceof SnsMessageError) throw badRequest(`The body is not an SNS message: ${err.message}`);
      throw err;
    }
  }

  async function verify(message: SnsMessage): Promise<void> {
    try {
      await verifier.verify(message);
    } catch (err) {
      if (err instanceof SnsSignatureError) {
        deps.logger.warn(
          { topicArn: message.TopicArn, messageId: message.MessageId, reason: err.message },
          'sns: refused a message whose signature does not verify',
        );
        throw forbidden(`SNS signature verification failed: ${err.message}`);
      }
      if (err instanceof SnsCertificateUnavailable) {
        deps.logger.warn({ topicArn: message.TopicArn, reason: err.message }, 'sns: signing certificate unavailable');
        throw new ApiError(503, 'SERVICE_UNAVAILABLE', err.message, { headers: { 'Retry-After': '60' } });
      }
      throw err;
    }
  }

  async function confirmSubscription(message: SnsMessage): Promise<void> {
    const url = message.SubscribeURL!;
    if (!isAmazonSnsUrl(url)) throw badRequest('SubscribeURL is not an https URL on an Amazon SNS host');
    try {
      await fetcher(url);
    } catch (err) {
      deps.logger.warn({ topicArn: message.TopicArn, err }, 'sns: confirming the subscription failed');
      throw new ApiError(503, 'SERVICE_UNAVAILABLE', 'The subscription could not be confirmed now', { headers: { 'Retry-After': '60' } });
    }
    deps.logger.info({ topicArn: message.TopicArn }, 'sns: subscription confirmed');
  }

  async function applyNotification(em: EntityManager, message: SnsMessage, notice: SesNotification): Promise<string> {
    const context = { topicArn: message.TopicArn, snsMessageId: message.MessageId };
    if (notice.kind === 'Other') {
      deps.logger.info({ ...context, type: notice.type }, 'sns: SES event type not acted on');
      return 'ignored';
    }
    const emailId = await emailFeedbackRepository.findEmailId(em, notice.ids);
    if (!emailId) {
      deps.logger.info({ ...context, kind: notice.kind, ...notice.ids }, 'sns: SES notice about an unknown email');
      return 'unknown-email';
    }
    const outcome =
      notice.kind === 'Delivery'
        ? await emailFeedbackRepository.recordDelivery(em, emailId)
        : notice.kind === 'Bounce'
          ? await emailFeedbackRepository.recordBounce(em, emailId, notice)
          : await emailFeedbackRepository.recordComplaint(em, emailId, notice);
    if (!outcome) return 'unknown-email';
    if ('ignored' in outcome && typeof outcome.ignored === 'string') {
      deps.logger.warn({ ...context, emailId, kind: notice.kind }, `sns: SES notice ignored: ${outcome.ignored}`);
      return 'ignored';
    }
    await deps.eventTriggers.afterEventsRecorded(outcome.projectId, outcome.events);
    return 'applied';
  }

  router.post('/webhooks/sns', async (ctx) => {
    const message = await readMessage(ctx);
    await verify(message);
    // A valid signature proves the message came from SNS, not from our topic: anyone can point
    // a topic of theirs at this endpoint. SNS_TOPIC_ARNS names the topics we take notices from.
    const allowed = deps.config.snsTopicArns;
    if (allowed.length && !allowed.includes(message.TopicArn)) {
      deps.logger.warn({ topicArn: message.TopicArn }, 'sns: refused a message from a topic not in SNS_TOPIC_ARNS');
      throw new ApiError(403, 'FORBIDDEN', 'This SNS topic is not accepted here (SNS_TOPIC_ARNS)');
    }
    let result: string;
    switch (message.Type) {
      case 'SubscriptionConfirmation':
        await confirmSubscription(message);
        result = 'subscribed';
        break;
      case 'UnsubscribeConfirmation':
        deps.logger.warn({ topicArn: message.TopicArn }, 'sns: this endpoint was unsubscribed from the topic; SES feedback from it stops');
        result = 'ignored';
        break;
      default: {
        const notice = parseSesNotification(message.Message);
        if (!notice) {
          deps.logger.info({ topicArn: message.TopicArn, snsMessageId: message.MessageId }, 'sns: notification is not an SES notice');
          result = 'ignored';
        } else {
          result = await applyNotification(ctx.state.em, message, notice);
        }
      }
    }
    ctx.body = { received: true, result };
  });

  return router;
}
