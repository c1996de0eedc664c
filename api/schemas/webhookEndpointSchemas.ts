import { z } from './zod';
import { cursorPage, id, nullableTimestamp, timestamp } from './responseFields';
import { limitParam } from './analyticsSchemas';
import { microsecondInstant } from './emailRecordSchemas';
import { enumOf } from '../../shared/zodFields';
import { uuidPattern } from '../http/validation';

// The request bodies live in shared/ (the dashboard's forms validate with them too).
export { webhookEndpointBody, webhookEndpointPatchBody, WEBHOOK_ENDPOINT_LIMITS } from '../../shared/webhookEndpointSchemas';

export const WEBHOOK_MESSAGE_STATUSES = ['PENDING', 'SUCCEEDED', 'FAILED'] as const;

/** GET /webhook-endpoints/:id/messages (contract 18): newest first. */
export const webhookMessageListQuery = z.object({
  status: enumOf('status', WEBHOOK_MESSAGE_STATUSES).optional(),
  limit: limitParam(20, 100),
  cursor: z.string().max(1000).optional(),
});

export const webhookMessageCursor = z.object({ t: microsecondInstant, id: z.string().regex(uuidPattern) });

// Responses.

const endpointFields = {
  id,
  url: z.string(),
  /** The patterns it is subscribed to: event names, prefix wildcards (`email.*`) or `*`. */
  events: z.array(z.string()),
  description: z.string().nullable(),
  /** False once disabled by PATCH, by a 410 Gone answer, or after failing for WEBHOOK_DISABLE_AFTER_HOURS. */
  enabled: z.boolean(),
  /** Why Mailroom disabled it (null when enabled, or disabled by PATCH). */
  disabledReason: z.string().nullable(),
  /** The secret's prefix and last characters: the secret itself is shown only at creation and rotation. */
  secretHint: z.string().openapi({ example: 'whsec_…Zq8=' }),
  createdAt: timestamp,
  updatedAt: timestamp,
};

/** The signing secret: `whsec_` + base64 of the key (Standard Webhooks). */
const secret = z.string().openapi({ example: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' });

export const webhookEndpointResponse = z.object(endpointFields).strict().openapi('WebhookEndpoint');

/** POST /webhook-endpoints: the endpoint and, this once, its secret. */
export const createdWebhookEndpointResponse = z
  .object({ ...endpointFields, secret })
  .strict()
  .openapi('CreatedWebhookEndpoint');

export const webhookEndpointListResponse = z.object({ data: z.array(webhookEndpointResponse) }).strict();

export const webhookSecretResponse = z.object({ secret }).strict().openapi('WebhookEndpointSecret');

/** POST .../test and .../retry: the message queued. */
export const webhookMessageAcceptedResponse = z.object({ messageId: id }).strict();

export const webhookAttemptResponse = z
  .object({
    at: timestamp,
    /** The receiver's status; null when no answer came (refused address, DNS, connection, timeout). */
    statusCode: z.number().int().nullable(),
    durationMs: z.number(),
    error: z.string().nullable(),
  })
  .strict()
  .openapi('WebhookAttempt');

export const webhookMessageResponse = z
  .object({
    /** The `webhook-id` header of every attempt. */
    id,
    eventType: z.string(),
    /** The recorded event's id; null for `webhook.test`. */
    eventId: id.nullable(),
    status: z.enum(WEBHOOK_MESSAGE_STATUSES),
    /** Oldest first. */
    attempts: z.array(webhookAttemptResponse),
    /** When the next attempt is due; null unless PENDING. */
    nextAttemptAt: nullableTimestamp,
    createdAt: timestamp,
  })
  .strict()
  .openapi('WebhookMessage');

export const webhookMessageListResponse = cursorPage(webhookMessageResponse).strict();
