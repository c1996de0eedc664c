import type { EntityManager } from '@mikro-orm/postgresql';
import type { RetentionSettings } from '../../lib/config';
import { jobUploadRepository } from '../../db/jobs/jobUploadRepository';
import { sessionRepository } from '../../db/repositories/sessionRepository';
import { userRepository } from '../../db/repositories/userRepository';
import { idempotencyKeyRepository } from '../../db/repositories/idempotencyKeyRepository';
import { executionRepository } from '../../db/automations/executionRepository';
import { inboundMessageRepository } from '../../db/inbound/inboundMessageRepository';
import { requestLogRepository } from '../../db/requestLog/requestLogRepository';
import { webhookMessageRepository } from '../../db/webhooks/webhookMessageRepository';

/**
 * What the hourly cleanup removes because it has served its purpose: one rule per kind of data.
 * A rule deletes in bounded statements (ROWS_PER_STATEMENT rows, fewer for big rows), so a large
 * backlog never holds long locks or one huge transaction, and stops between statements once its
 * pass is out of time; the next run goes on where it stopped (every rule is a plain "delete what is
 * old", so stopping anywhere is safe). Adding a kind (INBOUND_RETENTION_DAYS, say) is one more
 * entry in RETENTION_RULES: the cleanup workflow asks for the list at run time.
 */

/** Rows one delete statement removes at most. */
export const ROWS_PER_STATEMENT = 5000;
/** Upload chunks are up to 256 KB each: 100 per statement frees at most 25 MB at a time. */
const CHUNKS_PER_STATEMENT = 100;
/** Received messages are up to INBOUND_MAX_BYTES (10 MB by default) each: few per statement. */
const INBOUND_MESSAGES_PER_STATEMENT = 100;
/** Executions whose history one step-retention statement looks at. */
const EXECUTIONS_PER_PAGE = 500;
/**
 * A used or expired account token stays a day after it was issued: the per-account mail limit
 * counts the tokens issued in its last 15 minutes (used ones too), and a retried account-mail
 * request finds the token it issued by id instead of mailing another. A day covers both with room.
 */
const SPENT_ACCOUNT_TOKEN_KEPT_SECONDS = 24 * 3600;
/** Contract 18: outbound webhook messages and their attempts are kept 30 days. */
export const WEBHOOK_MESSAGES_KEPT_DAYS = 30;

export interface RetentionPass {
  em: EntityManager;
  settings: RetentionSettings;
  /** False once the pass is out of time: a rule stops between statements. */
  hasTime(): boolean;
}

/** One kind of data: removes what is past its retention, answers how many rows (files, for import uploads) went. */
export type RetentionRule = (pass: RetentionPass) => Promise<number>;

/** Runs `deleteBatch` (which removes at most `limit`) until a batch comes back short or time is up. */
async function inBatches(pass: RetentionPass, limit: number, deleteBatch: () => Promise<number>): Promise<number> {
  let removed = 0;
  while (pass.hasTime()) {
    const n = await deleteBatch();
    removed += n;
    if (n < limit) break;
  }
  return removed;
}

export const RETENTION_RULES = {
  /** Uploaded CSV files, IMPORT_FILE_RETENTION_DAYS after their import ended; uploads no job claimed, after an hour. */
  importFiles: async (pass) => {
    const days = pass.settings.importFileDays;
    await inBatches(pass, CHUNKS_PER_STATEMENT, () => jobUploadRepository.deleteSpentChunks(pass.em, days, CHUNKS_PER_STATEMENT));
    return inBatches(pass, ROWS_PER_STATEMENT, () => jobUploadRepository.deleteSpentUploads(pass.em, days, ROWS_PER_STATEMENT));
  },

  /** Dashboard sessions past their expiry (no longer accepted; before, removed only at that user's next login). */
  sessions: (pass) => inBatches(pass, ROWS_PER_STATEMENT, () => sessionRepository.deleteExpired(pass.em, ROWS_PER_STATEMENT)),

  /** Verification and reset tokens that were used or expired, a day after they were issued. */
  accountTokens: (pass) =>
    inBatches(pass, ROWS_PER_STATEMENT, () => userRepository.deleteSpentTokens(pass.em, SPENT_ACCOUNT_TOKEN_KEPT_SECONDS, ROWS_PER_STATEMENT)),

  /** Idempotency keys past their TTL (IDEMPOTENCY_KEY_TTL_HOURS, fixed in each key when it was claimed). */
  idempotencyKeys: (pass) => inBatches(pass, ROWS_PER_STATEMENT, () => idempotencyKeyRepository.deleteExpired(pass.em, ROWS_PER_STATEMENT)),

  /**
   * Automation step history beyond each execution's newest EXECUTION_STEPS_KEPT rows, running
   * executions included (one that loops for ever keeps a bounded history); the execution row
   * keeps its summary (status, current step, context, exit reason, error, times).
   */
  executionSteps: async (pass) => {
    const kept = pass.settings.executionStepsKept;
    let removed = 0;
    let after = '00000000-0000-0000-0000-000000000000';
    while (pass.hasTime()) {
      const page = await executionRepository.executionsWithLongHistory(pass.em, kept, after, EXECUTIONS_PER_PAGE);
      removed += await inBatches(pass, ROWS_PER_STATEMENT, () => executionRepository.deleteStepsBeyond(pass.em, page, kept, ROWS_PER_STATEMENT));
      if (page.length < EXECUTIONS_PER_PAGE) break;
      after = page[page.length - 1].executionId;
    }
    return removed;
  },

  /** Received messages' raw content, INBOUND_RETENTION_DAYS after receipt; the email records stay without it. */
  inboundContent: (pass) =>
    inBatches(pass, INBOUND_MESSAGES_PER_STATEMENT, () =>
      inboundMessageRepository.clearContentOlderThan(pass.em, pass.settings.inboundDays, INBOUND_MESSAGES_PER_STATEMENT),
    ),

  /** The projects' request logs (GET /requests): requests older than REQUEST_LOG_RETENTION_DAYS. */
  requestLog: (pass) =>
    inBatches(pass, ROWS_PER_STATEMENT, () => requestLogRepository.deleteOlderThan(pass.em, pass.settings.requestLogDays, ROWS_PER_STATEMENT)),

  /** Outbound webhook messages (and their attempts) created more than WEBHOOK_MESSAGES_KEPT_DAYS ago, delivered or not. */
  webhookMessages: (pass) =>
    inBatches(pass, ROWS_PER_STATEMENT, () =>
      webhookMessageRepository.deleteCreatedBefore(pass.em, new Date(Date.now() - WEBHOOK_MESSAGES_KEPT_DAYS * 86_400_000), ROWS_PER_STATEMENT),
    ),
} satisfies Record<string, RetentionRule>;

export type RetentionKind = keyof typeof RETENTION_RULES;

export const RETENTION_KINDS = Object.keys(RETENTION_RULES) as RetentionKind[];

export function isRetentionKind(kind: string): kind is RetentionKind {
  return Object.prototype.hasOwnProperty.call(RETENTION_RULES, kind);
}
