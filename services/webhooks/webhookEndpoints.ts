import crypto from 'node:crypto';
import { isIP } from 'node:net';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Config } from '../../lib/config';
import type { Logger } from '../../lib/logger';
import type { DnsResolver } from '../../lib/dns/dnsResolver';
import { sealWithSecret } from '../../lib/crypto';
import { conflict, notFound, validationFailed } from '../../lib/errors';
import { isUuid } from '../../lib/uuid';
import { parseWebhookUrl } from '../../lib/webhooks/webhookRequest';
import { checkWebhookAddress, isMetadataHostname, webhookAddressPolicyFromConfig } from '../../lib/webhooks/webhookAddressPolicy';
import { generateStandardWebhookSecret, standardWebhookSecretHint } from '../../lib/webhooks/standardWebhookSignature';
import { webhookEndpointRepository, type WebhookEndpointRow } from '../../db/webhooks/webhookEndpointRepository';
import {
  webhookMessageRepository,
  type WebhookMessageKey,
  type WebhookMessageRow,
  type WebhookMessageStatus,
} from '../../db/webhooks/webhookMessageRepository';
import type { TemporalHandle } from '../../temporal/client';
import { cancelWebhookDelivery } from '../../temporal/webhookDeliveryStart';
import { WEBHOOK_SECRET_PURPOSE } from './webhookDelivery';
import { WEBHOOK_ENDPOINT_LIMITS, type WebhookEndpointBody, type WebhookEndpointPatch } from '../../shared/webhookEndpointSchemas';

/**
 * A project's outbound webhook endpoints as its owner manages them (contract 18): creating one
 * with its secret, changing, disabling and deleting it, rotating the secret, the test event, and
 * the message log with its manual retry. Delivering the messages is webhookDelivery.ts's.
 */

export interface WebhookEndpointDeps {
  config: Pick<Config, 'secret' | 'webhookAllowPrivate' | 'webhookAllowedNetworks'>;
  /** The project's one resolver (DNS_SERVERS), which delivery asks too. */
  resolver: DnsResolver;
  temporal: TemporalHandle;
  logger: Logger;
}

/** How long the secret before a rotation still signs, beside the new one (contract 18). */
const PREVIOUS_SECRET_HOURS = 24;

const urlRefused = (message: string) => validationFailed([{ field: 'url', message, code: 'custom' }]);
const endpointNotFound = (id: string) => notFound('webhook endpoint', id);

/** An id as a path gave it: one that is no UUID names no endpoint (404, as an unknown one). */
function endpointIdOf(id: string): string {
  if (!isUuid(id)) throw endpointNotFound(id);
  return id.toLowerCase();
}

/**
 * The address rules of WEBHOOK steps (contract 12) applied when the URL is saved: the form
 * (parseWebhookUrl), a metadata host name, an IP literal, and what the host name resolves to
 * through the project's resolver. A name DNS cannot answer for now, or has no address for, is
 * accepted: it says nothing about where the name will lead, and every attempt and redirect is
 * checked again when it is made (the rule that matters; this one tells the owner early).
 */
async function checkEndpointUrl(deps: WebhookEndpointDeps, raw: string): Promise<void> {
  let url: URL;
  try {
    url = parseWebhookUrl(raw);
  } catch (err) {
    throw urlRefused((err as Error).message);
  }
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1').replace(/\.$/, '');
  if (isMetadataHostname(host)) throw urlRefused(`${host} is a cloud metadata service; webhook endpoints may only call public addresses`);

  let addresses: string[];
  let via = '';
  if (isIP(host)) addresses = [host];
  else if (host === 'localhost' || host.endsWith('.localhost')) {
    // RFC 6761: loopback whatever DNS says (as the webhook client treats them).
    addresses = ['127.0.0.1', '::1'];
    via = `${host} is loopback: `;
  } else {
    const answers = await Promise.allSettled([deps.resolver.a(host), deps.resolver.aaaa(host)]);
    addresses = answers.flatMap((answer) => (answer.status === 'fulfilled' ? answer.value : []));
    via = `${host} resolves to `;
    if (!addresses.length) deps.logger.debug({ host }, 'webhook endpoint: no address for the host yet; it is checked again on every attempt');
  }
  const policy = webhookAddressPolicyFromConfig(deps.config);
  for (const address of addresses) {
    const verdict = checkWebhookAddress(address, policy);
    if (!verdict.allowed) throw urlRefused(`Refused: ${via}${verdict.reason}; webhook endpoints may only call public addresses`);
  }
}

/** Sealed with the endpoint's id as the context, so a sealed value opens only as its own endpoint's (delivery opens it). */
function sealSecret(deps: WebhookEndpointDeps, endpointId: string, secret: string): string {
  return sealWithSecret(deps.config.secret, WEBHOOK_SECRET_PURPOSE, endpointId, secret);
}

/**
 * Stops the endpoint's delivery workflow after a delete or a disable. The change is committed
 * already and the workflow checks the endpoint before every round, so a Temporal that cannot be
 * reached only delays the stop: the answer does not fail for it (it waits out Temporal's call
 * deadline, a few seconds, at most).
 */
async function cancelDelivery(deps: WebhookEndpointDeps, endpointId: string): Promise<void> {
  try {
    await cancelWebhookDelivery(deps.temporal, endpointId);
  } catch (err) {
    deps.logger.warn({ endpointId, err }, 'webhook endpoint: could not cancel its delivery workflow; it stops at its next round');
  }
}

/** The project's endpoint; another project's is answered as a missing one (404). */
export async function findWebhookEndpoint(em: EntityManager, projectId: string, id: string): Promise<WebhookEndpointRow> {
  const endpoint = await webhookEndpointRepository.find(em, projectId, endpointIdOf(id));
  if (!endpoint) throw endpointNotFound(id);
  return endpoint;
}

/** A new endpoint and its secret, which is shown this once; at most WEBHOOK_ENDPOINT_LIMITS.perProject per project (422). */
export async function createWebhookEndpoint(
  deps: WebhookEndpointDeps,
  em: EntityManager,
  projectId: string,
  body: WebhookEndpointBody,
): Promise<{ endpoint: WebhookEndpointRow; secret: string }> {
  await checkEndpointUrl(deps, body.url);
  const id = crypto.randomUUID();
  const secret = generateStandardWebhookSecret();
  const endpoint = await webhookEndpointRepository.createWithin(
    em,
    projectId,
    {
      id,
      url: body.url,
      events: body.events,
      description: body.description ?? null,
      enabled: body.enabled ?? true,
      secretSealed: sealSecret(deps, id, secret),
      secretHint: standardWebhookSecretHint(secret),
    },
    WEBHOOK_ENDPOINT_LIMITS.perProject,
  );
  if (!endpoint) {
    throw validationFailed([
      {
        field: '(body)',
        message: `A project has at most ${WEBHOOK_ENDPOINT_LIMITS.perProject} webhook endpoints; delete one first`,
        code: 'too_big',
      },
    ]);
  }
  return { endpoint, secret };
}

/** PATCH: the fields given. Disabling stops delivery; enabling sends what is still pending (the repository). */
export async function updateWebhookEndpoint(
  deps: WebhookEndpointDeps,
  em: EntityManager,
  projectId: string,
  id: string,
  changes: WebhookEndpointPatch,
): Promise<WebhookEndpointRow> {
  const { id: endpointId } = await findWebhookEndpoint(em, projectId, id);
  if (changes.url !== undefined) await checkEndpointUrl(deps, changes.url);
  const endpoint = await webhookEndpointRepository.update(em, projectId, endpointId, changes);
  if (!endpoint) throw endpointNotFound(id);
  if (changes.enabled === false) await cancelDelivery(deps, endpointId);
  return endpoint;
}

/** Deletes the endpoint and its messages, and cancels its pending retries. */
export async function deleteWebhookEndpoint(deps: WebhookEndpointDeps, em: EntityManager, projectId: string, id: string): Promise<void> {
  const endpointId = endpointIdOf(id);
  if (!(await webhookEndpointRepository.remove(em, projectId, endpointId))) throw endpointNotFound(id);
  await cancelDelivery(deps, endpointId);
}

/** A new secret, shown this once; the one it replaces still signs (beside it) for 24 hours. */
export async function rotateWebhookSecret(deps: WebhookEndpointDeps, em: EntityManager, projectId: string, id: string): Promise<string> {
  const endpointId = endpointIdOf(id);
  const secret = generateStandardWebhookSecret();
  const endpoint = await webhookEndpointRepository.rotateSecret(em, projectId, endpointId, {
    sealed: sealSecret(deps, endpointId, secret),
    hint: standardWebhookSecretHint(secret),
    // Sealed with the same purpose and context, so the current value serves as the previous one unchanged.
    previousSealed: (current) => current,
    previousExpiresAt: new Date(Date.now() + PREVIOUS_SECRET_HOURS * 3600_000),
  });
  if (!endpoint) throw endpointNotFound(id);
  return secret;
}

/** Queues a `webhook.test` message for the endpoint alone; a disabled endpoint gets nothing (409). */
export async function sendWebhookTest(em: EntityManager, projectId: string, id: string): Promise<string> {
  const endpoint = await findWebhookEndpoint(em, projectId, id);
  if (!endpoint.enabled) throw disabledConflict(endpoint);
  return webhookMessageRepository.insertTest(em, endpoint);
}

/** A page of the endpoint's messages, newest first. */
export async function listWebhookMessages(
  em: EntityManager,
  projectId: string,
  id: string,
  options: { status?: WebhookMessageStatus; limit: number; after?: WebhookMessageKey },
): Promise<{ messages: WebhookMessageRow[]; hasMore: boolean; last: WebhookMessageKey | null }> {
  const endpoint = await findWebhookEndpoint(em, projectId, id);
  return webhookMessageRepository.page(em, endpoint.id, options);
}

/** Sends a message again now, whatever its status, with the same `webhook-id`; a disabled endpoint sends nothing (409). */
export async function retryWebhookMessage(em: EntityManager, projectId: string, id: string, messageId: string): Promise<void> {
  const endpoint = await findWebhookEndpoint(em, projectId, id);
  if (!endpoint.enabled) throw disabledConflict(endpoint);
  const retried = isUuid(messageId) && (await webhookMessageRepository.retryNow(em, endpoint, messageId.toLowerCase()));
  if (!retried) throw notFound('webhook message', messageId);
}

function disabledConflict(endpoint: WebhookEndpointRow) {
  return conflict('The webhook endpoint is disabled; enable it (PATCH enabled: true) first, which also sends what is pending', {
    endpointId: endpoint.id,
    disabledReason: endpoint.disabledReason,
  });
}
