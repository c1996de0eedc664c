import type { Orm } from '../../db/orm';
import type { RetentionSettings } from '../../lib/config';
import type { Logger } from '../../lib/logger';
import { isRetentionKind, RETENTION_RULES } from './retentionRules';

/**
 * How long one kind's pass deletes before it stops (between statements) and leaves the rest to
 * the next hourly run: well inside the cleanup activity's 5-minute timeout, and a huge backlog
 * (the first run after an upgrade) is worked off over several runs instead of in one long one.
 */
export const RETENTION_PASS_MS = 2 * 60_000;

export interface RetentionResult {
  kind: string;
  removed: number;
  /** False when the pass ran out of time with more to remove (the next run goes on). */
  finished: boolean;
}

/** Applies one kind's retention rule and logs what it removed. */
export async function applyRetention(
  deps: { orm: Orm; settings: RetentionSettings; logger: Pick<Logger, 'info' | 'warn'> },
  kind: string,
  passMs = RETENTION_PASS_MS,
): Promise<RetentionResult> {
  if (!isRetentionKind(kind)) {
    // A kind listed by a newer worker reached an older one (a rolling deploy): the next run does it.
    deps.logger.warn({ kind }, 'retention: unknown kind skipped');
    return { kind, removed: 0, finished: false };
  }
  const started = Date.now();
  const deadline = started + passMs;
  let outOfTime = false;
  const hasTime = () => {
    if (Date.now() < deadline) return true;
    outOfTime = true;
    return false;
  };
  const removed = await RETENTION_RULES[kind]({ em: deps.orm.em.fork(), settings: deps.settings, hasTime });
  const result = { kind, removed, finished: !outOfTime };
  deps.logger.info({ event: 'retention.applied', ...result, ms: Date.now() - started }, `retention: ${kind} removed ${removed}`);
  return result;
}
