/**
 * Reading a step's config at run time. The definition API validates configs when they are
 * written; these readers still check what they use, because a step runs with the config as it is
 * when the execution reaches it, and a config that cannot run fails the step with a clear error
 * instead of the execution as a whole.
 */
export class StepConfigError extends Error {}

import { DELAY_UNITS, MAX_WAIT_SECONDS, delayMilliseconds, type DelayUnit } from '../stepConfigs';

/** A DELAY or a WAIT_FOR_EVENT's timeout waits at most this long (contract section 12). */
export const MAX_DELAY_MS = MAX_WAIT_SECONDS * 1000;

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

export function exitReason(config: Record<string, unknown>): string {
  return typeof config.reason === 'string' && config.reason.trim() ? config.reason.trim() : 'Reached an EXIT step';
}
