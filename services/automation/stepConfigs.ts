/**
 * The stored config of each step kind, as api/schemas/workflowSchemas.ts normalises it before it
 * is saved (contract section 12). Pure types and arithmetic, no imports: the execution workflow
 * (deterministic Temporal code) and its activities read configs through these.
 */
export const DELAY_UNITS = ['minutes', 'hours', 'days'] as const;
export type DelayUnit = (typeof DELAY_UNITS)[number];

export const SUBSCRIPTION_ACTIONS = ['none', 'subscribe', 'unsubscribe'] as const;
export type SubscriptionAction = (typeof SUBSCRIPTION_ACTIONS)[number];

export const WEBHOOK_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;
export type WebhookMethod = (typeof WEBHOOK_METHODS)[number];

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
 * `field` as db/workflows/conditionStepField.ts reads it; `operator` one of the condition tree's
 * value operators; `unit` only with `within` / `olderThan`.
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

/** `updates` follow the contact data rules (db/contacts/contactDataRules.ts); reserved keys already dropped. */
export interface UpdateContactConfig {
  updates: Record<string, unknown>;
  subscriptionAction: SubscriptionAction;
}

export interface ExitConfig {
  reason?: string;
}

const UNIT_SECONDS: Record<DelayUnit, number> = { minutes: 60, hours: 3600, days: 86_400 };

export const MAX_WAIT_SECONDS = 365 * 24 * 60 * 60;

/** Seconds a DELAY waits. */
export function delaySeconds(config: DelayConfig): number {
  return config.amount * UNIT_SECONDS[config.unit];
}

/** Milliseconds a DELAY waits, rounded up to a whole millisecond (what a durable timer takes). */
export function delayMilliseconds(config: DelayConfig): number {
  return Math.ceil(delaySeconds(config) * 1000);
}
