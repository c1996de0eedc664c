import { Migration } from '@mikro-orm/migrations';

/**
 * Automation workflows (contract section 12): the definition (workflow, steps, transitions) and
 * the record of each execution with its step history. The execution itself runs as the Temporal
 * workflow `execution-<id>`; these rows are what the API lists and what an operator reads beside
 * the Temporal UI.
 */
export class Migration20261123110000AutomationWorkflows extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      -- Signs WEBHOOK step requests (X-Mailroom-Signature); one per project, shown to its members.
      alter table projects add column webhook_secret text not null
        default 'whsec_' || replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', '');

      create table workflows (
        id uuid primary key default gen_random_uuid(),
        project_id uuid not null references projects (id) on delete cascade,
        name text not null,
        description text,
        trigger_type text not null default 'EVENT' check (trigger_type = 'EVENT'),
        trigger_event_name text not null,
        enabled boolean not null default false,
        allow_reentry boolean not null default false,
        -- Set by the first execution: the trigger event may no longer change after it.
        first_execution_at timestamptz,
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now()
      );
      create index workflows_project_created_index on workflows (project_id, created_at desc, id);
      -- "Which enabled workflows does this event start?", asked for every recorded event.
      create index workflows_enabled_trigger_index on workflows (project_id, trigger_event_name) where enabled;

      create table workflow_steps (
        id uuid primary key default gen_random_uuid(),
        workflow_id uuid not null references workflows (id) on delete cascade,
        type text not null check (type in ('TRIGGER', 'SEND_EMAIL', 'DELAY', 'WAIT_FOR_EVENT', 'CONDITION', 'WEBHOOK', 'UPDATE_CONTACT', 'EXIT')),
        name text not null,
        position_x double precision not null default 0,
        position_y double precision not null default 0,
        config jsonb not null default '{}'::jsonb,
        -- SEND_EMAIL's template, kept as a column so a template in use cannot silently vanish.
        template_id uuid references templates (id) on delete restrict,
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now()
      );
      create index workflow_steps_workflow_index on workflow_steps (workflow_id, created_at);
      create index workflow_steps_template_index on workflow_steps (template_id) where template_id is not null;
      -- One TRIGGER step per workflow.
      create unique index workflow_steps_one_trigger on workflow_steps (workflow_id) where type = 'TRIGGER';

      create table workflow_transitions (
        id uuid primary key default gen_random_uuid(),
        workflow_id uuid not null references workflows (id) on delete cascade,
        from_step_id uuid not null references workflow_steps (id) on delete cascade,
        to_step_id uuid not null references workflow_steps (id) on delete cascade,
        branch text check (branch in ('yes', 'no')),
        wait_outcome text check (wait_outcome in ('EVENT', 'TIMEOUT')),
        created_at timestamptz not null default now(),
        constraint workflow_transitions_not_self check (from_step_id <> to_step_id)
      );
      create index workflow_transitions_workflow_index on workflow_transitions (workflow_id);
      create index workflow_transitions_to_index on workflow_transitions (to_step_id);
      -- A step has at most one way out per branch / wait outcome.
      create unique index workflow_transitions_one_way_out
        on workflow_transitions (from_step_id, coalesce(branch, ''), coalesce(wait_outcome, ''));

      create table workflow_executions (
        id uuid primary key default gen_random_uuid(),
        project_id uuid not null references projects (id) on delete cascade,
        workflow_id uuid not null references workflows (id) on delete cascade,
        contact_id uuid not null references contacts (id) on delete cascade,
        status text not null default 'RUNNING' check (status in ('RUNNING', 'WAITING', 'COMPLETED', 'EXITED', 'FAILED', 'CANCELLED')),
        -- No foreign key: a step edited away while the execution waits stays named here.
        current_step_id uuid,
        context jsonb not null default '{}'::jsonb,
        -- The event that started it (null when started by hand); one execution per event.
        trigger_event_id uuid,
        -- True when the workflow did not allow re-entry at entry: at most one such row per contact.
        single_entry boolean not null default false,
        exit_reason text,
        error text,
        -- What a WAITING execution waits for (activity "upcoming", and signal routing).
        waiting_for_event text,
        wait_until timestamptz,
        started_at timestamptz not null default now(),
        completed_at timestamptz,
        updated_at timestamptz not null default now()
      );
      create index workflow_executions_workflow_started_index on workflow_executions (workflow_id, started_at desc, id);
      create index workflow_executions_project_started_index on workflow_executions (project_id, started_at desc, id);
      create index workflow_executions_active_index on workflow_executions (workflow_id, status) where status in ('RUNNING', 'WAITING');
      -- "Which waiting executions of this contact wait for this event?", asked for every recorded event.
      create index workflow_executions_waiting_index on workflow_executions (contact_id, waiting_for_event) where status = 'WAITING' and waiting_for_event is not null;
      create unique index workflow_executions_per_event on workflow_executions (workflow_id, trigger_event_id) where trigger_event_id is not null;
      create unique index workflow_executions_single_entry on workflow_executions (workflow_id, contact_id) where single_entry;

      create table workflow_execution_steps (
        id uuid primary key default gen_random_uuid(),
        execution_id uuid not null references workflow_executions (id) on delete cascade,
        -- The walk's position (0 = TRIGGER): a retried activity writes the same row again.
        sequence int not null,
        step_id uuid not null,
        step_type text not null,
        status text not null check (status in ('RUNNING', 'WAITING', 'COMPLETED', 'FAILED', 'SKIPPED', 'CANCELLED')),
        output jsonb,
        error text,
        started_at timestamptz not null default now(),
        completed_at timestamptz,
        constraint workflow_execution_steps_sequence_unique unique (execution_id, sequence)
      );

      alter table emails add constraint emails_workflow_execution_fk foreign key (workflow_execution_id)
        references workflow_executions (id) on delete set null;
    `);
  }

  override async down(): Promise<void> {
    this.addSql(`
      alter table emails drop constraint if exists emails_workflow_execution_fk;
      drop table if exists workflow_execution_steps;
      drop table if exists workflow_executions;
      drop table if exists workflow_transitions;
      drop table if exists workflow_steps;
      drop table if exists workflows;
      alter table projects drop column if exists webhook_secret;
    `);
  }
}
