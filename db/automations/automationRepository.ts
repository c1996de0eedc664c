import type { EntityManager } from '@mikro-orm/postgresql';
import { likeContains } from '../contacts/contactQueries';
import { queryRows, type TimestampText } from '../sql/rows';
import type { Branch, GraphStep, GraphTransition, StepType, WaitOutcome } from './automationSteps';
import { EXECUTION_STATUSES, type ExecutionStatus } from './executionRepository';

/**
 * Automation definitions (contract section 12; "workflows" in the HTTP paths and the tables
 * `workflows`, `workflow_steps`, `workflow_transitions`): the automation, its steps and its
 * transitions. Every query is scoped to a project (through the automation) so that another
 * project's ids are as missing as ids that never existed.
 */
export interface AutomationRow {
  id: string;
  projectId: string;
  name: string;
  description: string | null;
  triggerType: 'EVENT';
  triggerEventName: string;
  enabled: boolean;
  allowReentry: boolean;
  firstExecutionAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface StepRow extends GraphStep {
  automationId: string;
  name: string;
  positionX: number;
  positionY: number;
  templateId: string | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface TransitionRow extends GraphTransition {
  automationId: string;
  createdAt: Date;
}

export interface AutomationDefinition {
  automation: AutomationRow;
  steps: StepRow[];
  transitions: TransitionRow[];
}

export type AutomationSort = 'name' | 'createdAt' | 'updatedAt';

export interface AutomationListQuery {
  page: number;
  pageSize: number;
  enabled?: boolean;
  eventName?: string;
  search?: string;
  sort: AutomationSort;
  dir: 'asc' | 'desc';
}

export interface NewStep {
  type: StepType;
  name: string;
  positionX: number;
  positionY: number;
  config: Record<string, unknown>;
  templateId: string | null;
}

export interface NewTransition {
  fromStepId: string;
  toStepId: string;
  branch: Branch | null;
  waitOutcome: WaitOutcome | null;
}

/** Executions that still run: a workflow with any of them cannot be deleted. */
export const ACTIVE_EXECUTION_STATUSES = ['RUNNING', 'WAITING'] as const;

/** A `workflows` row as a statement returns it (the columns toAutomation reads). */
interface AutomationTableRow {
  id: string;
  project_id: string;
  name: string;
  description: string | null;
  trigger_type: AutomationRow['triggerType'];
  trigger_event_name: string;
  enabled: boolean;
  allow_reentry: boolean;
  first_execution_at: TimestampText | null;
  created_at: TimestampText;
  updated_at: TimestampText;
}

/** A `workflow_steps` row as a statement returns it. */
interface StepTableRow {
  id: string;
  workflow_id: string;
  type: StepType;
  name: string;
  /** double precision: a number. */
  position_x: number;
  position_y: number;
  /** jsonb, parsed by the driver. */
  config: Record<string, unknown> | null;
  template_id: string | null;
  created_at: TimestampText;
  updated_at: TimestampText;
}

/** A `workflow_transitions` row as a statement returns it. */
interface TransitionTableRow {
  id: string;
  workflow_id: string;
  from_step_id: string;
  to_step_id: string;
  branch: Branch | null;
  wait_outcome: WaitOutcome | null;
  created_at: TimestampText;
}

function toAutomation(row: AutomationTableRow): AutomationRow {
  return {
    id: row.id,
    projectId: row.project_id,
    name: row.name,
    description: row.description,
    triggerType: row.trigger_type,
    triggerEventName: row.trigger_event_name,
    enabled: row.enabled,
    allowReentry: row.allow_reentry,
    firstExecutionAt: row.first_execution_at ? new Date(row.first_execution_at) : null,
    createdAt: new Date(row.created_at),
    updatedAt: new Date(row.updated_at),
  };
}

/** `template_available`: whether the step's template is there, in the statements that join it (graph). */
function toStep(row: StepTableRow & { template_available?: boolean }): StepRow {
  return {
    id: row.id,
    automationId: row.workflow_id,
    type: row.type,
    name: row.name,
    positionX: Number(row.position_x),
    positionY: Number(row.position_y),
    config: row.config ?? {},
    templateId: row.template_id,
    // Set by the queries that join the template (definitions); otherwise left to the caller.
    ...(row.template_available !== undefined ? { templateAvailable: row.template_available } : {}),
    createdAt: new Date(row.created_at),
    updatedAt: new Date(row.updated_at),
  };
}

function toTransition(row: TransitionTableRow): TransitionRow {
  return {
    id: row.id,
    automationId: row.workflow_id,
    fromStepId: row.from_step_id,
    toStepId: row.to_step_id,
    branch: row.branch,
    waitOutcome: row.wait_outcome,
    createdAt: new Date(row.created_at),
  };
}

const sortExpression: Record<AutomationSort, string> = { name: 'lower(w.name)', createdAt: 'w.created_at', updatedAt: 'w.updated_at' };

// The TRIGGER first, then the order steps were added in: lists and graphs read the same every time.
const STEP_ORDER = `order by (s.type = 'TRIGGER') desc, s.created_at, s.id`;

export const automationRepository = {
  /** The workflow, disabled, with its TRIGGER step: one statement, so neither exists without the other. */
  async create(
    em: EntityManager,
    projectId: string,
    input: { name: string; description: string | null; eventName: string; allowReentry: boolean; triggerStepName: string },
  ): Promise<AutomationDefinition> {
    // to_jsonb makes each row a JSON object, so its timestamps are JSON text (ISO 8601), read the same way.
    const rows = await queryRows<{ workflow: AutomationTableRow; step: StepTableRow }>(
      em,
      `with w as (
         insert into workflows (project_id, name, description, trigger_event_name, allow_reentry)
         values (?, ?, ?, ?, ?) returning *
       ), s as (
         insert into workflow_steps (workflow_id, type, name) select id, 'TRIGGER', ? from w returning *
       )
       select to_jsonb(w.*) as workflow, to_jsonb(s.*) as step from w, s`,
      [projectId, input.name, input.description, input.eventName, input.allowReentry, input.triggerStepName],
    );
    return { automation: toAutomation(rows[0].workflow), steps: [toStep(rows[0].step)], transitions: [] };
  },

  /** Null for a missing workflow and for another project's: the two are not told apart. */
  async findById(em: EntityManager, projectId: string, id: string): Promise<AutomationRow | null> {
    const rows = await queryRows<AutomationTableRow>(em, `select * from workflows where project_id = ? and id = ?`, [projectId, id]);
    return rows.length ? toAutomation(rows[0]) : null;
  },

  /** Whether the automation has its TRIGGER step, where a started execution begins. */
  async hasTriggerStep(em: EntityManager, automationId: string): Promise<boolean> {
    const rows = await queryRows(em, `select 1 from workflow_steps where workflow_id = ? and type = 'TRIGGER' limit 1`, [automationId]);
    return rows.length > 0;
  },

  /**
   * The workflow row locked until the transaction ends: every edit of a definition takes it first,
   * so that two edits never each pass the graph check and together break the graph.
   */
  async lock(tx: EntityManager, projectId: string, id: string): Promise<AutomationRow | null> {
    const rows = await queryRows<AutomationTableRow>(tx, `select * from workflows where project_id = ? and id = ? for update`, [projectId, id]);
    return rows.length ? toAutomation(rows[0]) : null;
  },

  /** The workflow with its steps (each knowing whether its template is still there) and transitions. */
  async load(em: EntityManager, projectId: string, id: string): Promise<AutomationDefinition | null> {
    const automation = await this.findById(em, projectId, id);
    if (!automation) return null;
    return { automation, ...(await this.graph(em, automation)) };
  },

  async graph(em: EntityManager, automation: Pick<AutomationRow, 'id' | 'projectId'>): Promise<{ steps: StepRow[]; transitions: TransitionRow[] }> {
    const steps = await queryRows<StepTableRow & { template_available: boolean }>(
      em,
      `select s.*, (t.id is not null) as template_available
       from workflow_steps s left join templates t on t.id = s.template_id and t.project_id = ?
       where s.workflow_id = ? ${STEP_ORDER}`,
      [automation.projectId, automation.id],
    );
    const transitions = await queryRows<TransitionTableRow>(em, `select * from workflow_transitions where workflow_id = ? order by created_at, id`, [
      automation.id,
    ]);
    return { steps: steps.map(toStep), transitions: transitions.map(toTransition) };
  },

  /**
   * One offset page and the number of matches. Search is a case-insensitive substring match on
   * name, description or trigger event name; the order always ends with id.
   */
  async list(
    em: EntityManager,
    projectId: string,
    q: AutomationListQuery,
  ): Promise<{ automations: Array<AutomationRow & { stepCount: number; executionCounts: Record<ExecutionStatus, number> }>; total: number }> {
    const where = ['w.project_id = ?'];
    const params: unknown[] = [projectId];
    if (q.enabled !== undefined) {
      where.push('w.enabled = ?');
      params.push(q.enabled);
    }
    if (q.eventName !== undefined) {
      where.push('w.trigger_event_name = ?');
      params.push(q.eventName);
    }
    if (q.search) {
      const pattern = likeContains(q.search);
      where.push(`(w.name ilike ? or w.description ilike ? or w.trigger_event_name ilike ?)`);
      params.push(pattern, pattern, pattern);
    }
    const filter = where.join(' and ');
    const dir = q.dir === 'asc' ? 'asc' : 'desc';
    const rows = await queryRows<AutomationTableRow & { step_count: number; execution_counts: Record<string, number> | null }>(
      em,
      `select w.*, (select count(*)::int from workflow_steps s where s.workflow_id = w.id) as step_count,
         (select jsonb_object_agg(status, n) from
           (select e.status, count(*)::int as n from workflow_executions e where e.workflow_id = w.id group by e.status) by_status) as execution_counts
       from workflows w where ${filter}
       order by ${sortExpression[q.sort]} ${dir}, w.id ${dir}
       limit ? offset ?`,
      [...params, q.pageSize, (q.page - 1) * q.pageSize],
    );
    const [count] = await queryRows<{ n: number }>(em, `select count(*)::int as n from workflows w where ${filter}`, params);
    const countsOf = (counts: Record<string, number> | null) =>
      Object.fromEntries(EXECUTION_STATUSES.map((status) => [status, counts?.[status] ?? 0])) as Record<ExecutionStatus, number>;
    return {
      automations: rows.map((r) => ({ ...toAutomation(r), stepCount: r.step_count, executionCounts: countsOf(r.execution_counts) })),
      total: count.n,
    };
  },

  async update(
    tx: EntityManager,
    id: string,
    changes: { name?: string; description?: string | null; eventName?: string; enabled?: boolean; allowReentry?: boolean },
  ): Promise<AutomationRow> {
    const columns: Array<[string, unknown]> = [];
    if (changes.name !== undefined) columns.push(['name', changes.name]);
    if (changes.description !== undefined) columns.push(['description', changes.description]);
    if (changes.eventName !== undefined) columns.push(['trigger_event_name', changes.eventName]);
    if (changes.enabled !== undefined) columns.push(['enabled', changes.enabled]);
    if (changes.allowReentry !== undefined) columns.push(['allow_reentry', changes.allowReentry]);
    const rows = await queryRows<AutomationTableRow>(
      tx,
      `update workflows set ${[...columns.map(([c]) => `${c} = ?`), 'updated_at = now()'].join(', ')} where id = ? returning *`,
      [...columns.map(([, v]) => v), id],
    );
    return toAutomation(rows[0]);
  },

  /** A definition edit changes the workflow's updatedAt too. */
  async touch(tx: EntityManager, id: string): Promise<void> {
    await tx.execute(`update workflows set updated_at = now() where id = ?`, [id]);
  },

  /**
   * Active executions of a (locked) workflow. Asked in its own statement after the lock, so that an
   * execution committed while the lock was awaited is seen.
   */
  async activeExecutionCount(tx: EntityManager, automationId: string): Promise<number> {
    const [row] = await queryRows<{ n: number }>(tx, `select count(*)::int as n from workflow_executions where workflow_id = ? and status in (?, ?)`, [
      automationId,
      ...ACTIVE_EXECUTION_STATUSES,
    ]);
    return row.n;
  },

  /** Deletes the workflow unless executions still run: 'missing', 'deleted' or the number of active ones. */
  async deleteUnlessActive(em: EntityManager, projectId: string, id: string): Promise<'missing' | 'deleted' | { active: number }> {
    return em.transactional(async (tx) => {
      const automation = await this.lock(tx, projectId, id);
      if (!automation) return 'missing' as const;
      const active = await this.activeExecutionCount(tx, id);
      if (active > 0) return { active };
      await tx.execute(`delete from workflows where id = ?`, [id]);
      return 'deleted' as const;
    });
  },

  async findStep(em: EntityManager, automationId: string, stepId: string): Promise<StepRow | null> {
    const rows = await queryRows<StepTableRow>(em, `select * from workflow_steps where workflow_id = ? and id = ?`, [automationId, stepId]);
    return rows.length ? toStep(rows[0]) : null;
  },

  async stepCount(em: EntityManager, automationId: string): Promise<number> {
    const [row] = await queryRows<{ n: number }>(em, `select count(*)::int as n from workflow_steps where workflow_id = ?`, [automationId]);
    return row.n;
  },

  async insertStep(tx: EntityManager, automationId: string, step: NewStep): Promise<StepRow> {
    const rows = await queryRows<StepTableRow>(
      tx,
      `insert into workflow_steps (workflow_id, type, name, position_x, position_y, config, template_id)
       values (?, ?, ?, ?, ?, ?::jsonb, ?) returning *`,
      [automationId, step.type, step.name, step.positionX, step.positionY, JSON.stringify(step.config), step.templateId],
    );
    return toStep(rows[0]);
  },

  async updateStep(
    tx: EntityManager,
    automationId: string,
    stepId: string,
    changes: { name?: string; positionX?: number; positionY?: number; config?: Record<string, unknown>; templateId?: string | null },
  ): Promise<StepRow | null> {
    const columns: Array<[string, unknown]> = [];
    if (changes.name !== undefined) columns.push(['name = ?', changes.name]);
    if (changes.positionX !== undefined) columns.push(['position_x = ?', changes.positionX]);
    if (changes.positionY !== undefined) columns.push(['position_y = ?', changes.positionY]);
    if (changes.config !== undefined) columns.push(['config = ?::jsonb', JSON.stringify(changes.config)]);
    if (changes.templateId !== undefined) columns.push(['template_id = ?', changes.templateId]);
    const rows = await queryRows<StepTableRow>(
      tx,
      `update workflow_steps set ${[...columns.map(([c]) => c), 'updated_at = now()'].join(', ')} where workflow_id = ? and id = ? returning *`,
      [...columns.map(([, v]) => v), automationId, stepId],
    );
    return rows.length ? toStep(rows[0]) : null;
  },

  /**
   * Deletes a step and its transitions. With `splice`, each transition that led into the step is
   * redirected to the step's successor, keeping its own label (a CONDITION's `yes` into the deleted
   * step becomes a `yes` into the successor). The successor is the step's one next step; for a
   * CONDITION the `yes` branch, for a WAIT_FOR_EVENT the EVENT outcome (the other branch is left
   * unconnected, not deleted). A redirect that would lead a step to itself is dropped.
   * Returns the transitions created, or null when the step does not exist.
   */
  async deleteStep(tx: EntityManager, automationId: string, stepId: string, splice: boolean): Promise<TransitionRow[] | null> {
    const steps = await queryRows(tx, `select * from workflow_steps where workflow_id = ? and id = ? for update`, [automationId, stepId]);
    if (!steps.length) return null;
    const edges = (
      await queryRows<TransitionTableRow>(
        tx,
        `select * from workflow_transitions where workflow_id = ? and (from_step_id = ? or to_step_id = ?) order by created_at, id`,
        [automationId, stepId, stepId],
      )
    ).map(toTransition);
    await tx.execute(`delete from workflow_steps where id = ?`, [stepId]);
    if (!splice) return [];
    const outgoing = edges.filter((t) => t.fromStepId === stepId);
    const incoming = edges.filter((t) => t.toStepId === stepId);
    const successor = outgoing.find((t) => t.branch === 'yes' || t.waitOutcome === 'EVENT') ?? outgoing.find((t) => !t.branch && !t.waitOutcome) ?? outgoing[0];
    if (!successor) return [];
    const created: TransitionRow[] = [];
    for (const t of incoming) {
      if (t.fromStepId === successor.toStepId) continue;
      const rows = await queryRows<TransitionTableRow>(
        tx,
        `insert into workflow_transitions (workflow_id, from_step_id, to_step_id, branch, wait_outcome)
         values (?, ?, ?, ?, ?) on conflict do nothing returning *`,
        [automationId, t.fromStepId, successor.toStepId, t.branch, t.waitOutcome],
      );
      created.push(...rows.map(toTransition));
    }
    return created;
  },

  async insertTransition(tx: EntityManager, automationId: string, t: NewTransition): Promise<TransitionRow> {
    const rows = await queryRows<TransitionTableRow>(
      tx,
      `insert into workflow_transitions (workflow_id, from_step_id, to_step_id, branch, wait_outcome) values (?, ?, ?, ?, ?) returning *`,
      [automationId, t.fromStepId, t.toStepId, t.branch, t.waitOutcome],
    );
    return toTransition(rows[0]);
  },

  /** The transition out of `fromStepId` carrying these labels, if there is one (one way out per label). */
  async findWayOut(em: EntityManager, automationId: string, t: Pick<NewTransition, 'fromStepId' | 'branch' | 'waitOutcome'>): Promise<TransitionRow | null> {
    const rows = await queryRows<TransitionTableRow>(
      em,
      `select * from workflow_transitions where workflow_id = ? and from_step_id = ? and branch is not distinct from ? and wait_outcome is not distinct from ?`,
      [automationId, t.fromStepId, t.branch, t.waitOutcome],
    );
    return rows.length ? toTransition(rows[0]) : null;
  },

  async deleteTransition(tx: EntityManager, automationId: string, transitionId: string): Promise<boolean> {
    const rows = await tx.execute(`delete from workflow_transitions where workflow_id = ? and id = ? returning id`, [automationId, transitionId]);
    return rows.length > 0;
  },

  async templateInProject(em: EntityManager, projectId: string, templateId: string): Promise<boolean> {
    const rows = await queryRows(em, `select 1 from templates where project_id = ? and id = ?`, [projectId, templateId]);
    return rows.length > 0;
  },

  /** SEND_EMAIL steps sending a template (GET /templates/:id/usage, and what stops its deletion). */
  async stepsUsingTemplate(em: EntityManager, projectId: string, templateId: string) {
    return em.execute<Array<{ id: string; name: string; workflowId: string; workflowName: string; enabled: boolean }>>(
      `select s.id, s.name, w.id as "workflowId", w.name as "workflowName", w.enabled
       from workflow_steps s join workflows w on w.id = s.workflow_id
       where w.project_id = ? and s.template_id = ?
       order by w.created_at, w.id, s.created_at, s.id`,
      [projectId, templateId],
    );
  },

  /** Workflows started by an event name, or with a WAIT_FOR_EVENT step waiting for it (GET /events/:eventName/usage). */
  async usingEvent(em: EntityManager, projectId: string, eventName: string) {
    const rows = await em.execute<Array<{ id: string; name: string; enabled: boolean; trigger: boolean; waitStepIds: string[] | null }>>(
      `select w.id, w.name, w.enabled, (w.trigger_event_name = ?) as trigger,
              (select array_agg(s.id order by s.created_at, s.id) from workflow_steps s
                where s.workflow_id = w.id and s.type = 'WAIT_FOR_EVENT' and s.config->>'eventName' = ?) as "waitStepIds"
       from workflows w
       where w.project_id = ?
         and (w.trigger_event_name = ? or exists (select 1 from workflow_steps s
                where s.workflow_id = w.id and s.type = 'WAIT_FOR_EVENT' and s.config->>'eventName' = ?))
       order by w.created_at, w.id`,
      [eventName, eventName, projectId, eventName, eventName],
    );
    return rows.map((r) => ({ id: r.id, name: r.name, enabled: r.enabled, trigger: r.trigger, waitStepIds: r.waitStepIds ?? [] }));
  },

  /**
   * Workflows whose CONDITION steps read a custom contact field (or a path under it), as
   * `data.<path>` or `contact.data.<path>` (GET /contacts/fields/:field/usage).
   */
  async usingContactField(em: EntityManager, projectId: string, path: string[]) {
    const field = `data.${path.join('.')}`;
    return em.execute<Array<{ id: string; name: string }>>(
      `select w.id, w.name from workflows w
       where w.project_id = ? and exists (
         select 1 from workflow_steps s, lateral (select coalesce(s.config->>'field', '') as f) c
         where s.workflow_id = w.id and s.type = 'CONDITION'
           and (c.f in (?, ?) or starts_with(c.f, ?) or starts_with(c.f, ?)))
       order by w.created_at, w.id`,
      // starts_with, not left(c.f, n): n would be JavaScript's UTF-16 length, PostgreSQL counts code points.
      [projectId, field, `contact.${field}`, `${field}.`, `contact.${field}.`],
    );
  },

  /**
   * Names of events seen in the project with the top-level keys of their data and each key's most
   * common JSON type, read from the newest `sample` events (a bounded read on large projects).
   */
  async eventDataFields(em: EntityManager, projectId: string, sample: number) {
    return em.execute<Array<{ name: string; key: string | null; type: string | null; n: number }>>(
      `with recent as (select name, data from events where project_id = ? order by seq desc limit ?)
       select r.name, e.key, jsonb_typeof(e.value) as type, count(*)::int as n
       from recent r left join lateral jsonb_each(case when jsonb_typeof(r.data) = 'object' then r.data else '{}'::jsonb end) e on true
       group by 1, 2, 3`,
      [projectId, sample],
    );
  },

  /** Slugs of segments that emit entry and exit events. */
  async trackedSegmentSlugs(em: EntityManager, projectId: string): Promise<string[]> {
    const rows = await em.execute<Array<{ slug: string }>>(`select slug from segments where project_id = ? and track_membership order by slug`, [projectId]);
    return rows.map((r) => r.slug);
  },
};
