import { Migration } from '@mikro-orm/migrations';

/**
 * What the hourly retention (services/retention/retentionRules.ts) reads to find executions with
 * more step history than EXECUTION_STEPS_KEPT: only rows at position 50 (MIN_EXECUTION_STEPS_KEPT)
 * or later can be beyond the kept steps, and only long executions have them, so the index holds
 * the long executions' rows and the hourly look stays small however many short executions there are.
 */
export class Migration20261125030000RetentionIndexes extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create index workflow_execution_steps_deep_index on workflow_execution_steps (execution_id, sequence) where sequence >= 50;
    `);
  }

  override async down(): Promise<void> {
    this.addSql(`drop index if exists workflow_execution_steps_deep_index;`);
  }
}
