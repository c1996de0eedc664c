import Router from '@koa/router';
import type { z } from 'zod';
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
import { applyBounce, applyComplaint, applyDelivery } from '../../services/sending/emailFeedback';
import { parseSesReceipt, SesReceiptError, type SesReceipt } from '../../mail/sns/sesReceipt';
import { receiveInboundMessage } from '../../services/inbound/inboundReceipt';
import { snsMessageBody, snsWebhookResponse } from '../schemas/snsSchemas';
import { describedRoutes } from '../openapi/describedRouter';

/** What a message came to (the answer's `result`). */
type SnsResult = z.output<typeof snsWebhookResponse>['result'];

/** SNS messages are at most 256 KB. */
const SNS_BODY_LIMIT_BYTES = 256 * 1024;

/**
 * `POST /webhooks/sns`: Amazon SES feedback delivered by SNS (contract section 9), and mail SES
 * received for a verified domain (receipt notifications, contract 20). Every message is
 * signature-checked before anything is read from it; a forged one answers 403 and changes
 * nothing. Subscriptions are confirmed by fetching their SubscribeURL (an SNS host only).
 * Notices about unknown emails, and SES event types Mailroom does not act on, answer 200 so SNS
 * does not retry them. Effects are idempotent (see emailFeedbackRepository; a received message
 * is stored once per SES message id), so SNS's at-least-once delivery and replays change nothing twice.
 */
export function snsWebhookRoutes(deps: ApiDeps) {
  const router = new Router<AppState>();
  const route = describedRoutes(router, { tag: 'Provider callbacks', access: 'none' });
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

  async function applyNotification(em: EntityManager, message: SnsMessage, notice: SesNotification): Promise<SnsResult> {
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
    const feedback =
      notice.kind === 'Delivery'
        ? await applyDelivery(deps, em, emailId)
        : notice.kind === 'Bounce'
          ? await applyBounce(deps, em, emailId, notice)
          : await applyComplaint(deps, em, emailId, notice);
    if (feedback.result === 'unknown-email') return 'unknown-email';
    if (feedback.result === 'ignored') {
      deps.logger.warn({ ...context, emailId, kind: notice.kind }, `sns: SES notice ignored: ${feedback.reason}`);
      return 'ignored';
    }
    return 'applied';
  }

  /** A Received notification's receipt; null for any other notification. */
  function readReceipt(message: SnsMessage): SesReceipt | 'without-content' | null {
    try {
      return parseSesReceipt(message.Message);
    } catch (err) {
      if (!(err instanceof SesReceiptError)) throw err;
      if (err.withoutContent) {
        // Answering an error would only make SNS retry a notice that will never hold more.
        deps.logger.warn({ topicArn: message.TopicArn, snsMessageId: message.MessageId, reason: err.message }, 'sns: SES receipt without content not taken');
        return 'without-content';
      }
      throw badRequest(`The SES receipt notification is not valid: ${err.message}`);
    }
  }

  /**
   * Mail SES received for a project's domain, stored by the inbound reception the SMTP listener
   * uses (services/inbound/inboundReceipt.ts). 503 while it cannot be stored, so SNS delivers the
   * notice again; a notice delivered again once stored (SES's message id is the same) is answered
   * 200 `duplicate` and changes nothing.
   */
  async function receive(message: SnsMessage, receipt: SesReceipt): Promise<SnsResult> {
    const context = { topicArn: message.TopicArn, snsMessageId: message.MessageId, sesMessageId: receipt.sesMessageId };
    let result;
    try {
      result = await receiveInboundMessage(deps.inbound, {
        raw: receipt.raw,
        mailFrom: receipt.mailFrom,
        recipients: receipt.recipients,
        provider: { name: 'ses', messageId: receipt.sesMessageId, verdicts: receipt.verdicts },
      });
    } catch (err) {
      deps.logger.warn({ ...context, err }, 'sns: the SES receipt could not be stored');
      throw new ApiError(503, 'SERVICE_UNAVAILABLE', 'The message could not be stored now', { headers: { 'Retry-After': '60' } });
    }
    if (!result.stored) {
      deps.logger.warn({ ...context, refused: result.refused }, 'sns: SES receipt for no verified domain of any project');
      return 'ignored';
    }
    if (result.refused.length) deps.logger.info({ ...context, refused: result.refused }, 'sns: SES receipt recipients not received here');
    if (result.duplicate) {
      deps.logger.info({ ...context, inboundMessageId: result.messageId }, 'sns: SES receipt delivered again; the message was stored before');
      return 'duplicate';
    }
    return 'received';
  }

  route.post(
    '/webhooks/sns',
    {
      summary: 'Receive an Amazon SNS message',
      description:
        'For Amazon SNS only: SES bounce, complaint and delivery notices, and mail SES received for a verified domain. ' +
        'SNS posts the JSON message as `text/plain`; an `application/json` body is read the same way (at most 256 KB). ' +
        'Every message is signature-checked first: a forged one, or one from a topic not in SNS_TOPIC_ARNS, answers 403 and changes nothing. ' +
        'A SubscriptionConfirmation is confirmed by fetching its SubscribeURL. Notices about unknown emails and event types not acted on answer 200, so SNS does not retry them; ' +
        'effects are idempotent. 503 (with Retry-After) while the signing certificate cannot be fetched or received mail cannot be stored: SNS delivers the message again.',
      body: { schema: snsMessageBody, contentType: 'text/plain' },
      responses: { 200: { description: 'The message was taken: SNS does not send it again', schema: snsWebhookResponse } },
    },
    async (ctx) => {
      const message = await readMessage(ctx);
      await verify(message);
      // A valid signature proves the message came from SNS, not from our topic: anyone can point
      // a topic of theirs at this endpoint. SNS_TOPIC_ARNS names the topics we take notices from.
      const allowed = deps.config.snsTopicArns;
      if (allowed.length && !allowed.includes(message.TopicArn)) {
        deps.logger.warn({ topicArn: message.TopicArn }, 'sns: refused a message from a topic not in SNS_TOPIC_ARNS');
        throw new ApiError(403, 'FORBIDDEN', 'This SNS topic is not accepted here (SNS_TOPIC_ARNS)');
      }
      let result: SnsResult;
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
          const receipt = readReceipt(message);
          if (receipt === 'without-content') {
            result = 'ignored';
            break;
          }
          if (receipt) {
            result = await receive(message, receipt);
            break;
          }
          const notice = parseSesNotification(message.Message);
          if (!notice) {
            deps.logger.info({ topicArn: message.TopicArn, snsMessageId: message.MessageId }, 'sns: notification is not an SES notice');
            result = 'ignored';
          } else {
            result = await applyNotification(ctx.state.em, message, notice);
          }
        }
      }
      ctx.body = { received: true, result } satisfies z.input<typeof snsWebhookResponse>;
    },
  );

  return router;
}
