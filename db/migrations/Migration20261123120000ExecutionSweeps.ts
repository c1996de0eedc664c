import { Migration } from '@mikro-orm/migrations';

/**
 * What the execution sweep needs to repair what a dying process leaves behind (see
 * services/automation/executionTriggers.ts and workflows/workflowExecutionSweepWorkflow.ts):
 * - `workflows.enabled_at`: when the workflow was last enabled, kept by the database itself so
 *   that whatever enables a workflow (the API, a SQL console) sets it. Events recorded before it
 *   never start an execution, also when the sweep looks back for events that got none.
 * - `workflow_executions.waiting_since`: when the current wait began; an event of the awaited
 *   name recorded since then and not yet delivered is signalled again by the sweep.
 * - an index over RUNNING executions by start, for "recorded but never started".
 */
export class Migration20261123120000ExecutionSweeps extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      alter table workflows add column enabled_at timestamptz;
      update workflows set enabled_at = updated_at where enabled;
      create function workflows_enabled_at() returns trigger language plpgsql as $$
      begin
        if new.enabled and (tg_op = 'INSERT' or not old.enabled) then
          new.enabled_at := now();
        end if;
        return new;
      end $$;
      create trigger workflows_enabled_at before insert or update of enabled on workflows
        for each row execute function workflows_enabled_at();

      alter table workflow_executions add column waiting_since timestamptz;
      create index workflow_executions_running_started_index on workflow_executions (started_at) where status = 'RUNNING';
      create index workflow_executions_waiting_since_index on workflow_executions (waiting_since) where status = 'WAITING' and waiting_for_event is not null;
    `);
  }

  override async down(): Promise<void> {
    this.addSql(`
      drop index if exists workflow_executions_waiting_since_index;
      drop index if exists workflow_executions_running_started_index;
      alter table workflow_executions drop column if exists waiting_since;
      drop trigger if exists workflows_enabled_at on workflows;
      drop function if exists workflows_enabled_at();
      alter table workflows drop column if exists enabled_at;
    `);
  }
}
