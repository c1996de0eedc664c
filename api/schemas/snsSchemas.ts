import { z } from './zod';

/**
 * POST /webhooks/sns: an Amazon SNS message (AWS's "HTTP/HTTPS notification JSON format"). SNS
 * posts it as JSON text with `Content-Type: text/plain; charset=UTF-8`. What the route requires
 * of it is checked by mail/sns/snsSignature.ts (`parseSnsMessage`), whose refusals name the field;
 * this schema describes the same message for the API description.
 */
export const snsMessageBody = z
  .object({
    Type: z.enum(['Notification', 'SubscriptionConfirmation', 'UnsubscribeConfirmation']),
    MessageId: z.string(),
    TopicArn: z.string().describe('Only the topics in SNS_TOPIC_ARNS are taken, when it is set'),
    Message: z.string().describe('A Notification: the SES notice (Bounce, Complaint, Delivery, or Received mail) as JSON text'),
    Timestamp: z.string(),
    SignatureVersion: z.enum(['1', '2']),
    Signature: z.string(),
    SigningCertURL: z.string().describe('An https .pem URL on an Amazon SNS host'),
    Subject: z.string().nullable().optional(),
    Token: z.string().optional().describe('Subscription and unsubscription confirmations'),
    SubscribeURL: z.string().optional().describe('Subscription and unsubscription confirmations: fetched to confirm the subscription'),
    UnsubscribeURL: z.string().optional(),
  })
  .openapi('SnsMessage');

export const snsWebhookResponse = z
  .object({
    received: z.literal(true),
    result: z
      .enum(['subscribed', 'applied', 'received', 'duplicate', 'unknown-email', 'ignored'])
      .describe(
        'subscribed (the subscription was confirmed); applied (a bounce, complaint or delivery notice changed its email); received (SES mail stored); ' +
          'duplicate (that mail was stored before); unknown-email (a notice about no email sent here); ignored (nothing to do)',
      ),
  })
  .strict();
