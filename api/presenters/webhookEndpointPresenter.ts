import type { z } from 'zod';
import type { WebhookEndpointRow } from '../../db/webhooks/webhookEndpointRepository';
import type { WebhookMessageRow } from '../../db/webhooks/webhookMessageRepository';
import type { createdWebhookEndpointResponse, webhookEndpointResponse, webhookMessageResponse } from '../schemas/webhookEndpointSchemas';

/** An outbound webhook endpoint (contract 18): never its secret, only the hint. */
export function serializeWebhookEndpoint(endpoint: WebhookEndpointRow): z.input<typeof webhookEndpointResponse> {
  return {
    id: endpoint.id,
    url: endpoint.url,
    events: endpoint.events,
    description: endpoint.description,
    enabled: endpoint.enabled,
    disabledReason: endpoint.disabledReason,
    secretHint: endpoint.secretHint,
    createdAt: endpoint.createdAt,
    updatedAt: endpoint.updatedAt,
  };
}

/** The answer of POST /webhook-endpoints, the one time (besides a rotation) the secret is shown. */
export function serializeCreatedWebhookEndpoint(endpoint: WebhookEndpointRow, secret: string): z.input<typeof createdWebhookEndpointResponse> {
  return { ...serializeWebhookEndpoint(endpoint), secret };
}

/** A message of the log, its attempts as stored (copied field by field: the stored JSON is the worker's). */
export function serializeWebhookMessage(message: WebhookMessageRow): z.input<typeof webhookMessageResponse> {
  return {
    id: message.id,
    eventType: message.eventType,
    eventId: message.eventId,
    status: message.status,
    attempts: message.attempts.map((a) => ({ at: a.at, statusCode: a.statusCode ?? null, durationMs: a.durationMs, error: a.error ?? null })),
    nextAttemptAt: message.nextAttemptAt,
    createdAt: message.createdAt,
  };
}
