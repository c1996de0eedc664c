import type { EntityManager } from '@mikro-orm/postgresql';
import type { Config } from '../../../lib/config';
import { dnsResolverFromConfig, type DnsResolver } from '../../../lib/dns/dnsResolver';
import { sendWebhook, WebhookError } from '../../../lib/webhooks/webhookRequest';
import { compileTemplate } from '../../../mail/rendering/templateCompiler';
import { templateVariables } from '../../sending/templateVariables';
import { type ContactRow } from '../../../db/contacts/contactRepository';
import { serializeContact } from '../../contacts/contactShape';
import type { DefinitionStep, ExecutionRow } from '../../../db/automations/executionRepository';
import { StepConfigError, WEBHOOK_METHODS, type WebhookMethod } from '../stepConfigs';
import { webhookSecretRepository } from '../../../db/repositories/webhookSecretRepository';
import { automationRepository } from '../../../db/automations/automationRepository';

/** A temporary webhook failure with attempts left: the activity throws `cause` so Temporal retries after its backoff. */
export class WebhookStepRetry extends Error {
  constructor(override readonly cause: Error) {
    super(cause.message);
  }
}

const resolvers = new WeakMap<Config, DnsResolver>();
function resolverFor(config: Config): DnsResolver {
  let resolver = resolvers.get(config);
  if (!resolver) resolvers.set(config, (resolver = dnsResolverFromConfig(config)));
  return resolver;
}

/** `{{var}}` in one string, with the variables of an email (contact data, context); nothing is HTML-escaped. */
function templated(source: string, variables: Record<string, unknown>, where: string): string {
  const compiled = compileTemplate('subject', source);
  if (!compiled.render) throw new StepConfigError(`WEBHOOK ${where}: ${compiled.problems.join('; ')}`);
  return compiled.render(variables);
}

function templatedDeep(value: unknown, variables: Record<string, unknown>, where: string): unknown {
  if (typeof value === 'string') return templated(value, variables, where);
  if (Array.isArray(value)) return value.map((v, i) => templatedDeep(v, variables, `${where}.${i}`));
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, templatedDeep(v, variables, `${where}.${k}`)]));
  }
  return value;
}

/**
 * WEBHOOK `{ url, method?, headers?, body? }` (contract section 12) through the one webhook client
 * (lib/webhooks: the address connected to is the address checked, redirects included; signed with
 * the project's secret; 10 s timeout). Strings are templated with the contact's data and the
 * execution's context; without a body the request carries
 * `{ contact, workflow: { id, name }, execution: { id, startedAt }, event }` (event = the context).
 * A temporary failure (5xx, 408, 429, network, timeout) is retried with backoff up to
 * `maxAttempts`; a permanent one, or the last attempt, fails the step.
 */
export async function webhookStep(
  em: EntityManager,
  config: Config,
  input: { execution: ExecutionRow; step: DefinitionStep; contact: ContactRow; context: Record<string, unknown>; attempt: number; maxAttempts: number },
): Promise<Record<string, unknown>> {
  const c = input.step.config;
  if (typeof c.url !== 'string' || !c.url) throw new StepConfigError('WEBHOOK needs a url');
  const method = (typeof c.method === 'string' ? c.method.toUpperCase() : 'POST') as WebhookMethod;
  if (!WEBHOOK_METHODS.includes(method)) throw new StepConfigError(`WEBHOOK method must be one of ${WEBHOOK_METHODS.join(', ')}`);
  const variables = templateVariables(input.contact, input.context);
  const url = templated(c.url, variables, 'url');
  const headers: Record<string, string> = {};
  if (c.headers !== undefined && c.headers !== null) {
    if (typeof c.headers !== 'object' || Array.isArray(c.headers)) throw new StepConfigError('WEBHOOK headers must be an object of strings');
    for (const [name, value] of Object.entries(c.headers)) {
      if (typeof value !== 'string') throw new StepConfigError(`WEBHOOK header ${name} must be a string`);
      headers[name] = templated(value, variables, `headers.${name}`);
    }
  }
  let body: string | undefined;
  if (method !== 'GET') {
    if (typeof c.body === 'string') body = templated(c.body, variables, 'body');
    else if (c.body !== undefined && c.body !== null) body = JSON.stringify(templatedDeep(c.body, variables, 'body'));
    else {
      const automation = await automationRepository.findById(em, input.execution.projectId, input.execution.automationId);
      body = JSON.stringify({
        contact: serializeContact(input.contact),
        workflow: { id: automation?.id ?? input.execution.automationId, name: automation?.name ?? null },
        execution: { id: input.execution.id, startedAt: input.execution.startedAt },
        event: input.context,
      });
    }
  }
  const secret = await webhookSecretRepository.find(em, input.execution.projectId);
  try {
    const answer = await sendWebhook({
      url,
      method,
      headers,
      body,
      secret: secret ?? undefined,
      resolver: resolverFor(config),
      allowPrivate: config.webhookAllowPrivate,
      allowedNetworks: config.webhookAllowedNetworks,
    });
    return {
      status: answer.status,
      durationMs: Math.round(answer.durationMs),
      finalUrl: answer.finalUrl,
      body: answer.body.slice(0, 2000),
      attempts: input.attempt,
    };
  } catch (err) {
    if (!(err instanceof WebhookError)) throw err;
    if (err.retryable && input.attempt < input.maxAttempts) throw new WebhookStepRetry(err);
    throw new StepConfigError(`${err.message}${err.retryable ? ` (after ${input.attempt} attempts)` : ''}`);
  }
}
