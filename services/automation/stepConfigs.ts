/**
 * The rules of step configs (contract section 12), in one place: the kinds' values, the stored
 * shape of each kind's config, the limits, the wait arithmetic, and the run-time readers.
 *
 * A config is checked twice. When it is written, api/schemas/automationSchemas.ts validates it
 * with these values and limits and stores it normalised (the types below). When a step runs, the
 * readers here (and in steps/) still check what they use, because a step runs with the config as
 * it is when the execution reaches it, and a config that cannot run fails the step with a clear
 * error (StepConfigError) instead of the execution as a whole.
 */
import { OPERATORS, type Operator } from '../../db/conditions/conditionTree';
import { webhookMethods } from '../../lib/webhooks/webhookRequest';

export const DELAY_UNITS = ['minutes', 'hours', 'days'] as const;
export type DelayUnit = (typeof DELAY_UNITS)[number];

export const SUBSCRIPTION_ACTIONS = ['none', 'subscribe', 'unsubscribe'] as const;
export type SubscriptionAction = (typeof SUBSCRIPTION_ACTIONS)[number];

/** The methods the webhook client sends (lib/webhooks). */
export const WEBHOOK_METHODS = webhookMethods;
export type WebhookMethod = (typeof WEBHOOK_METHODS)[number];

/** The filter operators that compare a value (the event and segment operators belong to the condition tree's own fields). */
export const CONDITION_STEP_OPERATORS: Operator[] = OPERATORS.filter(
  (o) => !['triggered', 'notTriggered', 'triggeredWithin', 'triggeredOlderThan', 'notTriggeredWithin', 'memberOfSegment', 'notMemberOfSegment'].includes(o),
);

/** Headers the HTTP client or the signature own: a WEBHOOK step may not set them. */
export const RESERVED_WEBHOOK_HEADERS = new Set(['host', 'content-length', 'transfer-encoding', 'connection', 'x-mailroom-signature']);
/** An HTTP header name: token characters only. */
export const WEBHOOK_HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/** A DELAY, or a WAIT_FOR_EVENT's timeout, waits at most 365 days. */
export const MAX_WAIT_SECONDS = 365 * 24 * 60 * 60;
export const MAX_DELAY_MS = MAX_WAIT_SECONDS * 1000;

/** Bounds of the step configs, checked when a config is written. */
export const STEP_CONFIG_LIMITS = {
  /** DELAY total and WAIT_FOR_EVENT timeout. */
  maxWaitSeconds: MAX_WAIT_SECONDS,
  exitReason: 500,
  webhookUrl: 2048,
  webhookHeaders: 50,
  webhookHeaderName: 100,
  webhookHeaderValue: 998,
  /** A WEBHOOK body, as text or as JSON. */
  webhookBodyBytes: 64 * 1024,
  conditionField: 300,
} as const;

/** `recipient` is always present once saved: `{ type: 'CONTACT' }` when the client sent none. */
export interface SendEmailConfig {
  templateId: string;
  recipient: { type: 'CONTACT' } | { type: 'CUSTOM'; customEmail: string };
}

/** `amount` may be fractional (0.1 minutes = 6 s); the total is at most 365 days. */
export interface DelayConfig {
  amount: number;
  unit: DelayUnit;
}

/** `timeout` in seconds (fractional allowed), absent when the step waits for ever. */
export interface WaitForEventConfig {
  eventName: string;
  timeout?: number;
}

/**
 * `field` as services/automation/conditionStepField.ts reads it; `operator` one of
 * CONDITION_STEP_OPERATORS; `unit` only with `within` / `olderThan`.
 */
export interface ConditionConfig {
  field: string;
  operator: string;
  value?: unknown;
  unit?: 'minutes' | 'hours' | 'days' | 'weeks' | 'months';
}

/** `method` always present once saved (POST by default); `body` a string or JSON, strings templated. */
export interface WebhookConfig {
  url: string;
  method: WebhookMethod;
  headers?: Record<string, string>;
  body?: unknown;
}

/** `updates` follow the contact data rules (services/contacts/contactDataRules.ts); reserved keys already dropped. */
export interface UpdateContactConfig {
  updates: Record<string, unknown>;
  subscriptionAction: SubscriptionAction;
}

export interface ExitConfig {
  reason?: string;
}

// ---------------------------------------------------------------------------------------------
// Rules used both when a config is written and when it runs

const UNIT_SECONDS: Record<DelayUnit, number> = { minutes: 60, hours: 3600, days: 86_400 };

/** Seconds a DELAY waits. */
export function delaySeconds(config: DelayConfig): number {
  return config.amount * UNIT_SECONDS[config.unit];
}

/** Milliseconds a DELAY waits, rounded up to a whole millisecond (what a durable timer takes). */
export function delayMilliseconds(config: DelayConfig): number {
  return Math.ceil(delaySeconds(config) * 1000);
}

/** A WEBHOOK url whose `{{placeholders}}` are filled at run time: checked with them stood in for. */
export function webhookUrlProblem(url: string): string | null {
  if (/\s|[\u0000-\u001f\u007f]/.test(url)) return 'url must not contain spaces, line breaks or other control characters';
  if (!/^https?:\/\//i.test(url)) return 'url must start with http:// or https://';
  let parsed: URL;
  try {
    parsed = new URL(url.replace(/\{\{\{?[^{}]*\}?\}\}/g, 'x'));
  } catch {
    return 'url is not a valid URL';
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return 'url must use http or https';
  if (!parsed.hostname) return 'url needs a host';
  return null;
}

// ---------------------------------------------------------------------------------------------
// Reading a stored config when its step runs

/** A step whose config cannot run: the step (and the execution) fail with this message. */
export class StepConfigError extends Error {}

/** DELAY `{ amount, unit }`: milliseconds; fractions of a unit are allowed (0.1 minute = 6 s). */
export function delayMs(config: Record<string, unknown>): number {
  const amount = config.amount;
  const unit = (config.unit ?? 'minutes') as string;
  if (typeof amount !== 'number' || !Number.isFinite(amount) || amount <= 0) throw new StepConfigError('DELAY needs a positive amount');
  if (!(DELAY_UNITS as readonly string[]).includes(unit))
    throw new StepConfigError(`DELAY unit must be minutes, hours or days, not ${String(unit).slice(0, 40)}`);
  const ms = delayMilliseconds({ amount, unit: unit as DelayUnit });
  if (ms > MAX_DELAY_MS) throw new StepConfigError('DELAY may wait at most 365 days');
  return Math.max(ms, 1);
}

/** WAIT_FOR_EVENT `{ eventName, timeout? }` (timeout in seconds, at most 365 days). */
export function waitForEvent(config: Record<string, unknown>): { eventName: string; timeoutMs: number | null } {
  const eventName = config.eventName;
  if (typeof eventName !== 'string' || !eventName.trim()) throw new StepConfigError('WAIT_FOR_EVENT needs an eventName');
  const timeout = config.timeout;
  if (timeout === undefined || timeout === null) return { eventName, timeoutMs: null };
  if (typeof timeout !== 'number' || !Number.isFinite(timeout) || timeout <= 0)
    throw new StepConfigError('WAIT_FOR_EVENT timeout must be a positive number of seconds');
  const timeoutMs = Math.round(timeout * 1000);
  if (timeoutMs > MAX_DELAY_MS) throw new StepConfigError('WAIT_FOR_EVENT timeout may be at most 365 days');
  return { eventName, timeoutMs: Math.max(timeoutMs, 1) };
}

/** EXIT `{ reason? }`: the reason recorded on the execution. */
export function exitReason(config: Record<string, unknown>): string {
  return typeof config.reason === 'string' && config.reason.trim() ? config.reason.trim() : 'Reached an EXIT step';
}

/** UPDATE_CONTACT's `subscriptionAction` (none when absent). */
export function subscriptionAction(config: Record<string, unknown>): SubscriptionAction {
  const action = config.subscriptionAction ?? 'none';
  if (!(SUBSCRIPTION_ACTIONS as readonly unknown[]).includes(action))
    throw new StepConfigError(`UPDATE_CONTACT subscriptionAction must be ${SUBSCRIPTION_ACTIONS.slice(0, -1).join(', ')} or ${SUBSCRIPTION_ACTIONS.at(-1)}`);
  return action as SubscriptionAction;
}
