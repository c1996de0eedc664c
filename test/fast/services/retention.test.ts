import { RETENTION_PASS_MS, applyRetention } from '../../../services/retention/retentionPass';
import { RETENTION_KINDS, isRetentionKind } from '../../../services/retention/retentionRules';
import type { Orm } from '../../../db/orm';

/**
 * How a retention pass is bounded (services/retention/retentionPass.ts): every rule looks at the
 * clock before each statement, so a pass out of time removes nothing more and says it did not
 * finish; a kind this worker does not know is left for the next run. What each rule deletes is
 * tested with the database (test/platform/retention.test.ts).
 */
const settings = { importFileDays: 7, inboundDays: 30, executionStepsKept: 100, tempFileMaxAgeHours: 24, requestLogDays: 7 };

/** A database nobody may use: a statement fails the test. */
const untouchable = {
  em: {
    fork: () =>
      new Proxy(
        {},
        {
          get(_target, property) {
            throw new Error(`the pass used the database (${String(property)}) with no time left`);
          },
        },
      ),
  },
} as unknown as Orm;

function recordingLogger() {
  const lines: Array<{ level: string; fields: Record<string, unknown>; message: string }> = [];
  return {
    lines,
    info: (fields: Record<string, unknown>, message: string) => lines.push({ level: 'info', fields, message }),
    warn: (fields: Record<string, unknown>, message: string) => lines.push({ level: 'warn', fields, message }),
  };
}

it('knows its kinds, a pass of each bounded by two minutes', () => {
  expect(RETENTION_KINDS).toEqual([
    'importFiles',
    'sessions',
    'accountTokens',
    'idempotencyKeys',
    'executionSteps',
    'inboundContent',
    'requestLog',
    'webhookMessages',
  ]);
  expect(RETENTION_KINDS.every(isRetentionKind)).toBe(true);
  expect(isRetentionKind('toString')).toBe(false);
  expect(RETENTION_PASS_MS).toBe(120_000);
});

it.each(RETENTION_KINDS)('a %s pass with no time left runs no statement and reports itself unfinished', async (kind) => {
  const logger = recordingLogger();
  await expect(
    applyRetention({ orm: untouchable, settings, logger: logger as unknown as Parameters<typeof applyRetention>[0]['logger'] }, kind, 0),
  ).resolves.toEqual({ kind, removed: 0, finished: false });
  expect(logger.lines).toEqual([
    {
      level: 'info',
      fields: expect.objectContaining({ event: 'retention.applied', kind, removed: 0, finished: false }),
      message: `retention: ${kind} removed 0`,
    },
  ]);
});

it('a kind listed by a newer worker is skipped, unfinished, for the next run', async () => {
  const logger = recordingLogger();
  await expect(
    applyRetention({ orm: untouchable, settings, logger: logger as unknown as Parameters<typeof applyRetention>[0]['logger'] }, 'attachments2030'),
  ).resolves.toEqual({
    kind: 'attachments2030',
    removed: 0,
    finished: false,
  });
  expect(logger.lines).toEqual([{ level: 'warn', fields: { kind: 'attachments2030' }, message: 'retention: unknown kind skipped' }]);
});
