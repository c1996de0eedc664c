import type { EntityManager } from '@mikro-orm/postgresql';
import { MIN_EXECUTION_STEPS_KEPT } from '../../lib/config';
import { dateOrNull, queryRows, type TimestampText } from '../sql/rows';

export const EXECUTION_STATUSES = ['RUNNING', 'WAITING', 'COMPLETED', 'EXITED', 'FAILED', 'CANCELLED'] as const;
export type ExecutionStatus = (typeof EXECUTION_STATUSES)[number];
export const ACTIVE_STATUSES: ExecutionStatus[] = ['RUNNING', 'WAITING'];

export type ExecutionStepStatus = 'RUNNING' | 'WAITING' | 'COMPLETED' | 'FAILED' | 'SKIPPED' | 'CANCELLED';

export interface ExecutionRow {
  id: string;
  projectId: string;
  automationId: string;
  contactId: string;
  status: ExecutionStatus;
  currentStepId: string | null;
  context: Record<string, unknown>;
  triggerEventId: string | null;
  exitReason: string | null;
  error: string | null;
  waitingForEvent: string | null;
  waitUntil: Date | null;
  startedAt: Date;
  completedAt: Date | null;
  updatedAt: Date;
}

/** An execution as the API lists it: with its contact's email (null when the contact is gone), read in the same statement. */
export interface ExecutionWithContactRow extends ExecutionRow {
  contactEmail: string | null;
}

export interface ExecutionStepRow {
  sequence: number;
  stepId: string;
  stepType: string;
  status: ExecutionStepStatus;
  output: unknown;
  error: string | null;
  startedAt: Date;
  completedAt: Date | null;
}

/** What starting an execution's Temporal workflow needs (its id and search attributes). */
export interface ExecutionToStart {
  id: string;
  projectId: string;
  automationId: string;
  contactId: string;
}

/** An event to hand to a waiting execution (the `eventArrived` signal). */
export interface EventForWaitingExecution {
  executionId: string;
  eventId: string;
  name: string;
  data: Record<string, unknown>;
  createdAt: string;
}

/** A step of a definition as it is now. */
export interface DefinitionStep {
  id: string;
  automationId: string;
  type: 'TRIGGER' | 'SEND_EMAIL' | 'DELAY' | 'WAIT_FOR_EVENT' | 'CONDITION' | 'WEBHOOK' | 'UPDATE_CONTACT' | 'EXIT';
  name: string;
  config: Record<string, unknown>;
  templateId: string | null;
}

export interface DefinitionTransition {
  id: string;
  fromStepId: string;
  toStepId: string;
  branch: 'yes' | 'no' | null;
  waitOutcome: 'EVENT' | 'TIMEOUT' | null;
}

/** A step-history row to write: `ageMs` ago is when the step reached this status (rows may be written a little later, together). */
export interface HistoryRow {
  sequence: number;
  stepId: string;
  stepType: string;
  status: ExecutionStepStatus;
  output?: unknown;
  error?: string | null;
  ageMs?: number;
}

/** What a run of steps needs, read in one statement: the execution, its definition as it is now, and the rows an earlier attempt completed. */
export interface WalkState {
  execution: ExecutionRow;
  steps: Map<string, DefinitionStep>;
  transitions: DefinitionTransition[];
  /** COMPLETED history rows from the asked position on. */
  completed: ExecutionStepRow[];
}

/** jsonb comes parsed from the driver; a string is JSON built as text (json_agg in walkState). */
const json = (value: unknown): unknown => (typeof value === 'string' ? (JSON.parse(value) as unknown) : value);
const objectOr = (value: unknown): Record<string, unknown> => {
  const parsed = json(value);
  return parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : {};
};

/** A `workflow_executions` row as a statement returns it (the columns toExecution reads). */
export interface ExecutionTableRow {
  id: string;
  project_id: string;
  workflow_id: string;
  contact_id: string;
  status: ExecutionStatus;
  current_step_id: string | null;
  context: unknown;
  trigger_event_id: string | null;
  exit_reason: string | null;
  error: string | null;
  waiting_for_event: string | null;
  wait_until: TimestampText | null;
  started_at: TimestampText;
  completed_at: TimestampText | null;
  updated_at: TimestampText;
}

/** A `workflow_executions` row joined to its contact's email. */
interface ExecutionWithContactTableRow extends ExecutionTableRow {
  contact_email: string | null;
}

/** A `workflow_execution_steps` row (the columns toStep reads). */
interface ExecutionStepTableRow {
  sequence: number;
  step_id: string;
  step_type: string;
  status: ExecutionStepStatus;
  output: unknown;
  error: string | null;
  started_at: TimestampText;
  completed_at: TimestampText | null;
}

/** A `workflow_steps` row as the walk reads it. */
interface DefinitionStepTableRow {
  id: string;
  workflow_id: string;
  type: DefinitionStep['type'];
  name: string;
  config: unknown;
  template_id: string | null;
}

/** A `workflow_transitions` row as the walk reads it. */
interface DefinitionTransitionTableRow {
  id: string;
  from_step_id: string;
  to_step_id: string;
  branch: DefinitionTransition['branch'];
  wait_outcome: DefinitionTransition['waitOutcome'];
}

function toExecution(row: ExecutionTableRow): ExecutionRow {
  return {
    id: row.id,
    projectId: row.project_id,
    automationId: row.workflow_id,
    contactId: row.contact_id,
    status: row.status,
    currentStepId: row.current_step_id,
    context: objectOr(row.context),
    triggerEventId: row.trigger_event_id,
    exitReason: row.exit_reason,
    error: row.error,
    waitingForEvent: row.waiting_for_event,
    waitUntil: dateOrNull(row.wait_until),
    startedAt: new Date(row.started_at),
    completedAt: dateOrNull(row.completed_at),
    updatedAt: new Date(row.updated_at),
  };
}

function toExecutionWithContact(row: ExecutionWithContactTableRow): ExecutionWithContactRow {
  return { ...toExecution(row), contactEmail: row.contact_email };
}

function toStep(row: ExecutionStepTableRow): ExecutionStepRow {
  return {
    sequence: row.sequence,
    stepId: row.step_id,
    stepType: row.step_type,
    status: row.status,
    output: json(row.output) ?? null,
    error: row.error,
    startedAt: new Date(row.started_at),
    completedAt: dateOrNull(row.completed_at),
  };
}

function toDefinitionStep(r: DefinitionStepTableRow): DefinitionStep {
  return { id: r.id, automationId: r.workflow_id, type: r.type, name: r.name, config: objectOr(r.config), templateId: r.template_id };
}

function toTransition(r: DefinitionTransitionTableRow): DefinitionTransition {
  return { id: r.id, fromStepId: r.from_step_id, toStepId: r.to_step_id, branch: r.branch, waitOutcome: r.wait_outcome };
}

/**
 * The upsert of history rows, as a CTE for the statement that moves the execution (one round trip
 * for both). A retried activity writes the same rows again; a row already final (COMPLETED,
 * FAILED, SKIPPED, CANCELLED) is not moved back.
 */
const HISTORY_CTE = `history as (
    insert into workflow_execution_steps (execution_id, sequence, step_id, step_type, status, output, error, started_at, completed_at)
    select ?::uuid, h.sequence, h.step_id, h.step_type, h.status, h.output, h.error,
           now() - make_interval(secs => h.age / 1000.0),
           case when h.status in ('RUNNING', 'WAITING') then null else now() - make_interval(secs => h.age / 1000.0) end
    from jsonb_to_recordset(?::jsonb) as h(sequence int, step_id uuid, step_type text, status text, output jsonb, error text, age double precision)
    on conflict (execution_id, sequence) do update set
      step_id = excluded.step_id, step_type = excluded.step_type, status = excluded.status,
      output = excluded.output, error = excluded.error, completed_at = excluded.completed_at
    where workflow_execution_steps.status in ('RUNNING', 'WAITING')
  )`;

const historyParams = (executionId: string, rows: HistoryRow[]) => [
  executionId,
  JSON.stringify(
    rows.map((r) => ({
      sequence: r.sequence,
      step_id: r.stepId,
      step_type: r.stepType,
      status: r.status,
      output: r.output === undefined ? null : r.output,
      error: r.error ?? null,
      age: Math.max(0, r.ageMs ?? 0),
    })),
  ),
];

const uuidArray = (ids: string[]) => `{${ids.join(',')}}`;

/**
 * Inserts one execution per (candidate event, workflow) pair, the event's data as context. The
 * unique indexes decide what is refused, whoever inserts at the same moment: one execution per
 * event and workflow, and for a workflow without re-entry one per contact ever (`single_entry`).
 * The first execution of a workflow stamps `first_execution_at` (its trigger is fixed from then).
 */
const INSERT_FROM_CANDIDATES = `
  inserted as (
    insert into workflow_executions (project_id, workflow_id, contact_id, context, trigger_event_id, single_entry, current_step_id)
    select w.project_id, w.id, e.contact_id,
           case when jsonb_typeof(e.data) = 'object' then e.data else '{}'::jsonb end,
           e.id, not w.allow_reentry,
           (select s.id from workflow_steps s where s.workflow_id = w.id and s.type = 'TRIGGER')
    from candidates c
    join events e on e.id = c.event_id
    join workflows w on w.id = c.workflow_id
    where e.contact_id is not null
    order by e.seq
    on conflict do nothing
    returning id, project_id, workflow_id, contact_id
  ),
  stamped as (
    update workflows set first_execution_at = now()
    where id in (select workflow_id from inserted) and first_execution_at is null
  )
  select * from inserted`;

const toStart = (rows: Array<Pick<ExecutionTableRow, 'id' | 'project_id' | 'workflow_id' | 'contact_id'>>): ExecutionToStart[] =>
  rows.map((r) => ({ id: r.id, projectId: r.project_id, automationId: r.workflow_id, contactId: r.contact_id }));

export const executionRepository = {
  /**
   * The trigger and wait event names of a project's workflows: what makes an event worth a
   * closer look (the trigger listener caches it per project). Waits count on disabled workflows
   * too, whose executions still run.
   */
  async eventNamesOfInterest(em: EntityManager, projectId: string): Promise<{ triggers: string[]; waits: string[] }> {
    const [row] = await em.execute(
      `select coalesce((select array_agg(distinct trigger_event_name) from workflows where project_id = ? and enabled), '{}') as triggers,
              coalesce((select array_agg(distinct s.config->>'eventName') from workflow_steps s join workflows w on w.id = s.workflow_id
                        where w.project_id = ? and s.type = 'WAIT_FOR_EVENT' and s.config->>'eventName' is not null), '{}') as waits`,
      [projectId, projectId],
    );
    return { triggers: row.triggers ?? [], waits: row.waits ?? [] };
  },

  /** Executions for recorded events of one project, one per enabled workflow they trigger. */
  async createForEvents(em: EntityManager, projectId: string, eventIds: string[]): Promise<ExecutionToStart[]> {
    if (!eventIds.length) return [];
    const rows = await queryRows<Pick<ExecutionTableRow, 'id' | 'project_id' | 'workflow_id' | 'contact_id'>>(
      em,
      `with candidates as (
         select e.id as event_id, w.id as workflow_id
         from events e join workflows w on w.project_id = e.project_id and w.trigger_event_name = e.name and w.enabled
         where e.id = any(?::uuid[]) and e.project_id = ?
       ), ${INSERT_FROM_CANDIDATES}`,
      [uuidArray(eventIds), projectId],
    );
    return toStart(rows);
  },

  /**
   * Recent events (recorded `minAgeSeconds` to `maxAgeSeconds` ago, after their workflow was
   * enabled) that got no execution: what a process that died between recording an event and
   * creating its executions leaves. Creates them.
   */
  async createForMissedEvents(em: EntityManager, minAgeSeconds: number, maxAgeSeconds: number, perAutomation: number): Promise<ExecutionToStart[]> {
    const rows = await queryRows<Pick<ExecutionTableRow, 'id' | 'project_id' | 'workflow_id' | 'contact_id'>>(
      em,
      `with candidates as (
         select e.id as event_id, w.id as workflow_id
         from workflows w
         cross join lateral (
           select e.id, e.created_at from events e
           where e.project_id = w.project_id and e.name = w.trigger_event_name
           order by e.seq desc limit ?
         ) e
         where w.enabled
           and e.created_at >= coalesce(w.enabled_at, w.updated_at)
           and e.created_at > now() - make_interval(secs => ?)
           and e.created_at < now() - make_interval(secs => ?)
           and not exists (select 1 from workflow_executions x where x.workflow_id = w.id and x.trigger_event_id = e.id)
       ), ${INSERT_FROM_CANDIDATES}`,
      [perAutomation, maxAgeSeconds, minAgeSeconds],
    );
    return toStart(rows);
  },

  /** An execution started by hand. Null when the workflow allows no re-entry and the contact entered before. */
  /** Deletes an execution whose workflow could not be started, unless a step of it ran after all. */
  async withdrawUnstarted(em: EntityManager, executionId: string): Promise<void> {
    await em.execute(`delete from workflow_executions where id = ? and not exists (select 1 from workflow_execution_steps where execution_id = ?)`, [
      executionId,
      executionId,
    ]);
  },

  async createManual(
    em: EntityManager,
    input: { projectId: string; automationId: string; contactId: string; context: Record<string, unknown>; allowReentry: boolean },
  ): Promise<ExecutionRow | null> {
    const rows = await queryRows<ExecutionTableRow>(
      em,
      `with inserted as (
         insert into workflow_executions (project_id, workflow_id, contact_id, context, single_entry, current_step_id)
         values (?, ?, ?, ?::jsonb, ?, (select s.id from workflow_steps s where s.workflow_id = ? and s.type = 'TRIGGER'))
         on conflict do nothing
         returning *
       ),
       stamped as (
         update workflows set first_execution_at = now() where id in (select workflow_id from inserted) and first_execution_at is null
       )
       select * from inserted`,
      [input.projectId, input.automationId, input.contactId, JSON.stringify(input.context), !input.allowReentry, input.automationId],
    );
    return rows.length ? toExecution(rows[0]) : null;
  },

  /**
   * Executions recorded at least `olderThanSeconds` ago (and within the last day) whose workflow
   * never ran a step: what a process that died between the row and the Temporal start leaves.
   */
  async findUnstarted(em: EntityManager, olderThanSeconds: number, limit: number): Promise<ExecutionToStart[]> {
    const rows = await queryRows<Pick<ExecutionTableRow, 'id' | 'project_id' | 'workflow_id' | 'contact_id'>>(
      em,
      `select x.id, x.project_id, x.workflow_id, x.contact_id from workflow_executions x
       where x.status = 'RUNNING' and x.started_at < now() - make_interval(secs => ?) and x.started_at > now() - interval '1 day'
         and not exists (select 1 from workflow_execution_steps s where s.execution_id = x.id)
       order by x.started_at limit ?`,
      [olderThanSeconds, limit],
    );
    return toStart(rows);
  },

  /** Waiting executions of the events' contacts that wait for the events' names. */
  async waitingForEvents(em: EntityManager, projectId: string, eventIds: string[]): Promise<EventForWaitingExecution[]> {
    if (!eventIds.length) return [];
    const rows = await queryRows<WaitingEventRow>(
      em,
      `select x.id as execution_id, e.id as event_id, e.name, e.data, e.created_at
       from events e
       join workflow_executions x on x.contact_id = e.contact_id and x.waiting_for_event = e.name and x.status = 'WAITING'
       where e.id = any(?::uuid[]) and e.project_id = ?
       order by e.seq`,
      [uuidArray(eventIds), projectId],
    );
    return rows.map(toWaitingEvent);
  },

  /**
   * Waiting executions (waiting at least `olderThanSeconds`) for which an awaited event was
   * recorded since their wait began: a signal that a dying process never sent. The workflow
   * ignores an event it already has.
   */
  async missedWaitEvents(em: EntityManager, olderThanSeconds: number, limit: number): Promise<EventForWaitingExecution[]> {
    const rows = await queryRows<WaitingEventRow>(
      em,
      `select x.id as execution_id, e.id as event_id, e.name, e.data, e.created_at
       from workflow_executions x
       cross join lateral (
         select e.id, e.name, e.data, e.created_at from events e
         where e.contact_id = x.contact_id and e.name = x.waiting_for_event and e.created_at >= x.waiting_since
         order by e.seq limit 1
       ) e
       where x.status = 'WAITING' and x.waiting_for_event is not null and x.waiting_since < now() - make_interval(secs => ?)
       limit ?`,
      [olderThanSeconds, limit],
    );
    return rows.map(toWaitingEvent);
  },

  async findById(em: EntityManager, id: string): Promise<ExecutionRow | null> {
    const rows = await queryRows<ExecutionTableRow>(em, `select * from workflow_executions where id = ?`, [id]);
    return rows.length ? toExecution(rows[0]) : null;
  },

  /** One execution of a workflow, with its contact's email (a join). */
  async findInAutomation(em: EntityManager, projectId: string, automationId: string, id: string): Promise<ExecutionWithContactRow | null> {
    const rows = await queryRows<ExecutionWithContactTableRow>(
      em,
      `select x.*, c.email as contact_email from workflow_executions x left join contacts c on c.id = x.contact_id
       where x.project_id = ? and x.workflow_id = ? and x.id = ?`,
      [projectId, automationId, id],
    );
    return rows.length ? toExecutionWithContact(rows[0]) : null;
  },

  async steps(em: EntityManager, executionId: string): Promise<ExecutionStepRow[]> {
    const rows = await queryRows<ExecutionStepTableRow>(em, `select * from workflow_execution_steps where execution_id = ? order by sequence`, [executionId]);
    return rows.map(toStep);
  },

  /** Newest first, offset pages; each with its contact's email (a join, not a query per row). */
  async list(em: EntityManager, projectId: string, automationId: string, q: { status?: ExecutionStatus; page: number; pageSize: number }) {
    const where = ['x.project_id = ?', 'x.workflow_id = ?'];
    const params: unknown[] = [projectId, automationId];
    if (q.status) {
      where.push('x.status = ?');
      params.push(q.status);
    }
    const rows = await queryRows<ExecutionWithContactTableRow>(
      em,
      `select x.*, c.email as contact_email from workflow_executions x left join contacts c on c.id = x.contact_id
       where ${where.join(' and ')} order by x.started_at desc, x.id desc limit ? offset ?`,
      [...params, q.pageSize, (q.page - 1) * q.pageSize],
    );
    const [{ n }] = await queryRows<{ n: number }>(em, `select count(*)::int as n from workflow_executions x where ${where.join(' and ')}`, params);
    return { executions: rows.map(toExecutionWithContact), total: n };
  },

  /** How many executions a workflow has in each status (every status present, zero included). */
  async countsByStatus(em: EntityManager, projectId: string, automationId: string): Promise<Record<ExecutionStatus, number>> {
    const counts = Object.fromEntries(EXECUTION_STATUSES.map((status) => [status, 0])) as Record<ExecutionStatus, number>;
    const rows = await queryRows<{ status: ExecutionStatus; n: number }>(
      em,
      `select status, count(*)::int as n from workflow_executions where project_id = ? and workflow_id = ? group by status`,
      [projectId, automationId],
    );
    for (const row of rows) counts[row.status] = row.n;
    return counts;
  },

  /**
   * Ends active executions CANCELLED (one, or every active one of a workflow) and answers the
   * ones it ended; their Temporal workflows are cancelled by the caller.
   */
  async cancelActive(em: EntityManager, projectId: string, automationId: string, executionId?: string): Promise<ExecutionToStart[]> {
    const rows = await queryRows<Pick<ExecutionTableRow, 'id' | 'project_id' | 'workflow_id' | 'contact_id'>>(
      em,
      `with cancelled as (
         update workflow_executions set status = 'CANCELLED', exit_reason = coalesce(exit_reason, 'Cancelled through the API'),
           waiting_for_event = null, wait_until = null, waiting_since = null, completed_at = now(), updated_at = now()
         where project_id = ? and workflow_id = ? and status in ('RUNNING', 'WAITING') ${executionId ? 'and id = ?' : ''}
         returning id, project_id, workflow_id, contact_id
       ),
       closed as (
         update workflow_execution_steps set status = 'CANCELLED', completed_at = now()
         where execution_id in (select id from cancelled) and status in ('RUNNING', 'WAITING')
       )
       select * from cancelled`,
      executionId ? [projectId, automationId, executionId] : [projectId, automationId],
    );
    return toStart(rows);
  },

  // ---- What the execution's activities read and write ----------------------------------------

  /**
   * The execution, its workflow's steps and transitions as they are now, and the COMPLETED history
   * rows from `fromSequence` on (what an earlier attempt of the same activity did): one statement.
   */
  async walkState(em: EntityManager, executionId: string, fromSequence: number): Promise<WalkState | null> {
    const rows = await queryRows<WalkStateRow>(
      em,
      `select x.*,
         (select coalesce(jsonb_agg(s), '[]') from workflow_steps s where s.workflow_id = x.workflow_id) as definition_steps,
         (select coalesce(jsonb_agg(t order by t.created_at, t.id), '[]') from workflow_transitions t where t.workflow_id = x.workflow_id) as definition_transitions,
         (select coalesce(jsonb_agg(h order by h.sequence), '[]') from workflow_execution_steps h
           where h.execution_id = x.id and h.sequence >= ? and h.status = 'COMPLETED') as completed_steps
       from workflow_executions x where x.id = ?`,
      [fromSequence, executionId],
    );
    if (!rows.length) return null;
    const r = rows[0];
    const steps = (json(r.definition_steps) as DefinitionStepTableRow[]).map(toDefinitionStep);
    return {
      execution: toExecution(r),
      steps: new Map(steps.map((step) => [step.id, step])),
      transitions: (json(r.definition_transitions) as DefinitionTransitionTableRow[]).map(toTransition),
      completed: (json(r.completed_steps) as ExecutionStepTableRow[]).map(toStep),
    };
  },

  /** Writes history rows (see HISTORY_CTE). */
  async recordSteps(em: EntityManager, executionId: string, rows: HistoryRow[]): Promise<void> {
    if (!rows.length) return;
    await em.execute(`with ${HISTORY_CTE} select 1`, historyParams(executionId, rows));
  },

  /**
   * RUNNING at `stepId` with `context`, writing `history` in the same statement. False when the
   * execution is no longer active (cancelled meanwhile).
   */
  async markRunning(em: EntityManager, id: string, stepId: string, context: Record<string, unknown>, history: HistoryRow[] = []): Promise<boolean> {
    const rows = await em.execute(
      `with ${HISTORY_CTE}
       update workflow_executions set status = 'RUNNING', current_step_id = ?, context = ?::jsonb,
         waiting_for_event = null, wait_until = null, waiting_since = null, updated_at = now()
       where id = ? and status in ('RUNNING', 'WAITING') returning id`,
      [...historyParams(id, history), stepId, JSON.stringify(context), id],
    );
    return rows.length > 0;
  },

  /**
   * WAITING in `stepId` (a DELAY until `waitUntil`, or a WAIT_FOR_EVENT for `eventName`), writing
   * `history` in the same statement. Answers when the wait began, or null when no longer active.
   */
  async markWaiting(
    em: EntityManager,
    id: string,
    stepId: string,
    wait: { eventName: string | null; waitUntil: Date | null; context: Record<string, unknown> },
    history: HistoryRow[] = [],
  ): Promise<Date | null> {
    const rows = await em.execute(
      `with ${HISTORY_CTE}
       update workflow_executions set status = 'WAITING', current_step_id = ?, waiting_for_event = ?, wait_until = ?,
         context = ?::jsonb, waiting_since = now(), updated_at = now()
       where id = ? and status in ('RUNNING', 'WAITING') returning waiting_since`,
      [...historyParams(id, history), stepId, wait.eventName, wait.waitUntil, JSON.stringify(wait.context), id],
    );
    return rows.length ? new Date(rows[0].waiting_since) : null;
  },

  /** Ends an active execution, writing `history` in the same statement; a finished one keeps its end. */
  async finish(
    em: EntityManager,
    id: string,
    end: { status: 'COMPLETED' | 'EXITED' | 'FAILED' | 'CANCELLED'; exitReason?: string | null; error?: string | null; context?: Record<string, unknown> },
    history: HistoryRow[] = [],
  ): Promise<boolean> {
    const rows = await em.execute(
      `with ${HISTORY_CTE}
       update workflow_executions set status = ?, exit_reason = ?, error = ?, context = coalesce(?::jsonb, context),
         waiting_for_event = null, wait_until = null, waiting_since = null, completed_at = now(), updated_at = now()
       where id = ? and status in ('RUNNING', 'WAITING') returning id`,
      [...historyParams(id, history), end.status, end.exitReason ?? null, end.error ?? null, end.context ? JSON.stringify(end.context) : null, id],
    );
    return rows.length > 0;
  },

  // ---- Retention ------------------------------------------------------------------------------

  /**
   * Executions, by id after `afterId`, whose history reaches position `kept` or beyond (so may
   * have rows before their newest `kept`), each with its newest position. Reads the partial index
   * workflow_execution_steps_deep_index: `kept` is never below MIN_EXECUTION_STEPS_KEPT.
   */
  async executionsWithLongHistory(em: EntityManager, kept: number, afterId: string, limit: number): Promise<Array<{ executionId: string; top: number }>> {
    const rows = await em.execute(
      `select execution_id, max(sequence) as top from workflow_execution_steps
       where sequence >= ${MIN_EXECUTION_STEPS_KEPT} and sequence >= ? and execution_id > ?
       group by execution_id order by execution_id limit ?`,
      [kept, afterId, limit],
    );
    return rows.map((r) => ({ executionId: r.execution_id, top: Number(r.top) }));
  },

  /**
   * Removes at most `limit` history rows of these executions older than their newest `kept`
   * (positions up to `top - kept`); rows still RUNNING or WAITING stay. Answers how many went.
   * The walk reads and rewrites only rows from its activity's starting position on, which is
   * among the newest `kept` (services/automation/executionWalk.ts), and the API shows each row
   * with its position, so a history that starts late says so.
   */
  async deleteStepsBeyond(em: EntityManager, executions: Array<{ executionId: string; top: number }>, kept: number, limit: number): Promise<number> {
    if (!executions.length) return 0;
    const [row] = await em.execute(
      `with doomed as (
         select s.execution_id, s.sequence
         from unnest(?::uuid[], ?::int[]) as t(execution_id, top)
         join workflow_execution_steps s on s.execution_id = t.execution_id and s.sequence <= t.top - ?
         where s.status not in ('RUNNING', 'WAITING')
         limit ?
       ),
       gone as (
         delete from workflow_execution_steps s using doomed d where s.execution_id = d.execution_id and s.sequence = d.sequence returning 1
       )
       select count(*)::int as n from gone`,
      [uuidArray(executions.map((e) => e.executionId)), `{${executions.map((e) => e.top).join(',')}}`, kept, limit],
    );
    return row.n;
  },

  /** Steps the walk was in when the execution ended from outside (a cancel): their rows end too. */
  async closeOpenSteps(em: EntityManager, executionId: string, status: 'CANCELLED' | 'FAILED'): Promise<void> {
    await em.execute(`update workflow_execution_steps set status = ?, completed_at = now() where execution_id = ? and status in ('RUNNING', 'WAITING')`, [
      status,
      executionId,
    ]);
  },
};

/** An event matched to a waiting execution, as the two statements that find them select it. */
interface WaitingEventRow {
  execution_id: string;
  event_id: string;
  name: string;
  data: unknown;
  created_at: TimestampText;
}

/**
 * walkState's row: the execution, and its definition and completed history as jsonb_agg built
 * them (rows as JSON objects, so their timestamps are JSON text too).
 */
interface WalkStateRow extends ExecutionTableRow {
  definition_steps: unknown;
  definition_transitions: unknown;
  completed_steps: unknown;
}

function toWaitingEvent(r: WaitingEventRow): EventForWaitingExecution {
  return { executionId: r.execution_id, eventId: r.event_id, name: r.name, data: objectOr(r.data), createdAt: new Date(r.created_at).toISOString() };
}
