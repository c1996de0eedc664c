import Router from '@koa/router';
import type { z } from 'zod';
import type { ApiDeps, AppState } from '../state';
import { parseBody, parseQuery } from '../http/validation';
import { decodeCursor, encodeCursor } from '../http/cursor';
import { keyAuthenticated } from '../auth/apiKey';
import { describedRoutes } from '../openapi/describedRouter';
import { dnsResolverFromConfig } from '../../lib/dns/dnsResolver';
import { webhookEndpointRepository } from '../../db/webhooks/webhookEndpointRepository';
import {
  createWebhookEndpoint,
  deleteWebhookEndpoint,
  findWebhookEndpoint,
  listWebhookMessages,
  retryWebhookMessage,
  rotateWebhookSecret,
  sendWebhookTest,
  updateWebhookEndpoint,
  type WebhookEndpointDeps,
} from '../../services/webhooks/webhookEndpoints';
import {
  createdWebhookEndpointResponse,
  webhookEndpointBody,
  webhookEndpointListResponse,
  webhookEndpointPatchBody,
  webhookEndpointResponse,
  webhookMessageAcceptedResponse,
  webhookMessageCursor,
  webhookMessageListQuery,
  webhookMessageListResponse,
  webhookSecretResponse,
} from '../schemas/webhookEndpointSchemas';
import { serializeCreatedWebhookEndpoint, serializeWebhookEndpoint, serializeWebhookMessage } from '../presenters/webhookEndpointPresenter';

/** Outbound webhook endpoints and their message log (contract 18), secret key or session. */
export function webhookEndpointRoutes(deps: ApiDeps) {
  const router = new Router<AppState>();
  const auth = keyAuthenticated('secret', deps);
  const route = describedRoutes(router, { tag: 'Webhook endpoints', access: 'secret' });
  const services: WebhookEndpointDeps = { config: deps.config, resolver: dnsResolverFromConfig(deps.config), temporal: deps.temporal, logger: deps.logger };
  const urlRule =
    'The URL is http(s), at most 2,048 characters, without user:password, and its host may not be (or resolve to) a loopback, private, ' +
    'link-local or metadata address unless WEBHOOK_ALLOW_PRIVATE / WEBHOOK_ALLOWED_NETWORKS allow it (422 naming `url`).';

  route.post(
    '/webhook-endpoints',
    {
      summary: 'Register a webhook endpoint',
      description:
        'Every event of the project whose name matches one of `events` (an event name, a prefix wildcard such as `email.*`, or `*`) is POSTed to `url`, ' +
        'signed as Standard Webhooks specifies. The answer carries `secret`, shown this once (and at rotation). ' +
        `${urlRule} At most 20 endpoints per project (422).`,
      body: {
        schema: webhookEndpointBody,
        example: { url: 'https://example.com/hooks/mailroom', events: ['email.*', 'contact.unsubscribed'], description: 'CRM sync' },
      },
      responses: { 201: { description: 'The endpoint, with its secret', schema: createdWebhookEndpointResponse } },
    },
    ...auth,
    async (ctx) => {
      const body = parseBody(webhookEndpointBody, ctx.request.body);
      const { endpoint, secret } = await createWebhookEndpoint(services, ctx.state.em, ctx.state.project!.id, body);
      ctx.status = 201;
      ctx.body = serializeCreatedWebhookEndpoint(endpoint, secret);
    },
  );

  route.get(
    '/webhook-endpoints',
    {
      summary: 'List webhook endpoints',
      description: 'Oldest first; secrets are shown as `secretHint` only.',
      responses: { 200: { description: 'The project’s endpoints', schema: webhookEndpointListResponse } },
    },
    ...auth,
    async (ctx) => {
      const endpoints = await webhookEndpointRepository.list(ctx.state.em, ctx.state.project!.id);
      ctx.body = { data: endpoints.map(serializeWebhookEndpoint) } satisfies z.input<typeof webhookEndpointListResponse>;
    },
  );

  route.get(
    '/webhook-endpoints/:id',
    { summary: 'Get a webhook endpoint', responses: { 200: { description: 'The endpoint', schema: webhookEndpointResponse } } },
    ...auth,
    async (ctx) => {
      ctx.body = serializeWebhookEndpoint(await findWebhookEndpoint(ctx.state.em, ctx.state.project!.id, ctx.params.id));
    },
  );

  route.patch(
    '/webhook-endpoints/:id',
    {
      summary: 'Change a webhook endpoint',
      description:
        'Changes the fields given. `enabled: false` stops delivery (pending messages wait); `enabled: true` clears `disabledReason` and sends what is ' +
        `still pending. ${urlRule}`,
      body: { schema: webhookEndpointPatchBody, example: { enabled: true } },
      responses: { 200: { description: 'The endpoint as changed', schema: webhookEndpointResponse } },
    },
    ...auth,
    async (ctx) => {
      const changes = parseBody(webhookEndpointPatchBody, ctx.request.body);
      ctx.body = serializeWebhookEndpoint(await updateWebhookEndpoint(services, ctx.state.em, ctx.state.project!.id, ctx.params.id, changes));
    },
  );

  route.delete(
    '/webhook-endpoints/:id',
    {
      summary: 'Delete a webhook endpoint',
      description: 'Its messages go with it, and their pending retries are cancelled.',
      responses: { 204: { description: 'Deleted' } },
    },
    ...auth,
    async (ctx) => {
      await deleteWebhookEndpoint(services, ctx.state.em, ctx.state.project!.id, ctx.params.id);
      ctx.status = 204;
    },
  );

  route.post(
    '/webhook-endpoints/:id/rotate-secret',
    {
      summary: 'Rotate a webhook endpoint’s secret',
      description: 'Answers the new secret, shown this once. For 24 hours messages carry two signatures, by the new secret and by the one it replaces.',
      responses: { 200: { description: 'The new secret', schema: webhookSecretResponse } },
    },
    ...auth,
    async (ctx) => {
      const secret = await rotateWebhookSecret(services, ctx.state.em, ctx.state.project!.id, ctx.params.id);
      ctx.body = { secret } satisfies z.input<typeof webhookSecretResponse>;
    },
  );

  route.post(
    '/webhook-endpoints/:id/test',
    {
      summary: 'Send a test event',
      description: 'Queues a `webhook.test` message for this endpoint alone (it appears in its message log). A disabled endpoint answers 409.',
      responses: { 202: { description: 'Queued', schema: webhookMessageAcceptedResponse } },
    },
    ...auth,
    async (ctx) => {
      const messageId = await sendWebhookTest(ctx.state.em, ctx.state.project!.id, ctx.params.id);
      ctx.status = 202;
      ctx.body = { messageId } satisfies z.input<typeof webhookMessageAcceptedResponse>;
    },
  );

  route.get(
    '/webhook-endpoints/:id/messages',
    {
      summary: 'List a webhook endpoint’s messages',
      description: 'Newest first, in cursor pages, each with its attempts; `status` keeps PENDING, SUCCEEDED or FAILED ones. Messages are kept 30 days.',
      query: webhookMessageListQuery,
      responses: { 200: { description: 'A page of messages', schema: webhookMessageListResponse } },
    },
    ...auth,
    async (ctx) => {
      const q = parseQuery(webhookMessageListQuery, ctx.query);
      const after = q.cursor ? decodeCursor(q.cursor, webhookMessageCursor) : undefined;
      const page = await listWebhookMessages(ctx.state.em, ctx.state.project!.id, ctx.params.id, { status: q.status, limit: q.limit, after });
      ctx.body = {
        data: page.messages.map(serializeWebhookMessage),
        cursor: page.hasMore && page.last ? encodeCursor({ ...page.last }) : null,
        hasMore: page.hasMore,
      } satisfies z.input<typeof webhookMessageListResponse>;
    },
  );

  route.post(
    '/webhook-endpoints/:id/messages/:messageId/retry',
    {
      summary: 'Retry a webhook message',
      description: 'Sends the message again now, whatever its status, with the same `webhook-id`. A disabled endpoint answers 409.',
      responses: { 202: { description: 'Queued', schema: webhookMessageAcceptedResponse } },
    },
    ...auth,
    async (ctx) => {
      await retryWebhookMessage(ctx.state.em, ctx.state.project!.id, ctx.params.id, ctx.params.messageId);
      ctx.status = 202;
      ctx.body = { messageId: ctx.params.messageId.toLowerCase() } satisfies z.input<typeof webhookMessageAcceptedResponse>;
    },
  );

  return router;
}
