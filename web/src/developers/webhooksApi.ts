import { queryOptions } from '@tanstack/react-query';
import type { components, MailroomClient } from '../../../client/mailroomClient';
import { unwrap } from '../api/client';
import { queryKeys } from '../api/queries';

export type WebhookEndpoint = components['schemas']['WebhookEndpoint'];
export type WebhookMessage = components['schemas']['WebhookMessage'];
export type WebhookAttempt = components['schemas']['WebhookAttempt'];
export type WebhookMessageStatus = WebhookMessage['status'];

/**
 * The webhook endpoints' query keys, under the project's. No query ever holds a secret: the API
 * sends one only in the answers of creation and rotation, which stay in their mutations.
 */
export const webhookKeys = {
  all: (projectId: string) => [...queryKeys.project(projectId), 'webhook-endpoints'] as const,
  list: (projectId: string) => [...webhookKeys.all(projectId), 'list'] as const,
  one: (projectId: string, endpointId: string) => [...webhookKeys.all(projectId), 'one', endpointId] as const,
  messages: (projectId: string, endpointId: string) => [...webhookKeys.all(projectId), 'messages', endpointId] as const,
};

/** GET /webhook-endpoints: every endpoint of the project (at most 20, all at once). */
export const webhookEndpointsQuery = (projectId: string, client: MailroomClient) =>
  queryOptions({ queryKey: webhookKeys.list(projectId), queryFn: () => unwrap(client.GET('/webhook-endpoints')) });

export const webhookEndpointQuery = (projectId: string, client: MailroomClient, endpointId: string) =>
  queryOptions({
    queryKey: webhookKeys.one(projectId, endpointId),
    queryFn: () => unwrap(client.GET('/webhook-endpoints/{id}', { params: { path: { id: endpointId } } })),
  });

export const MESSAGE_STATUS_LABELS: Record<WebhookMessageStatus, string> = { PENDING: 'Pending', SUCCEEDED: 'Succeeded', FAILED: 'Failed' };

/** What an endpoint's state says in words (never by colour alone): "Enabled", or "Disabled" and why when the API knows. */
export function endpointStateText(endpoint: Pick<WebhookEndpoint, 'enabled' | 'disabledReason'>): { label: string; reason: string | null } {
  if (endpoint.enabled) return { label: 'Enabled', reason: null };
  return { label: 'Disabled', reason: endpoint.disabledReason };
}

/** An endpoint's name on its page and in lists: its description, else its URL. */
export function endpointName(endpoint: Pick<WebhookEndpoint, 'description' | 'url'>): string {
  return endpoint.description?.trim() || endpoint.url;
}
