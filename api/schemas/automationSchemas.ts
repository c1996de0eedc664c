import { z } from './zod';
import { emailAddress } from './commonFields';
import { offsetListQuery, offsetPage, offsetPageFields, singleLine } from './messageContentFields';
import { freeFormObject, id, nullableTimestamp, timestamp } from './responseFields';
import { EXECUTION_STATUSES } from '../../db/automations/executionRepository';
import { contactData } from '../../services/contacts/contactDataRules';
import { enumOf, finiteNumber, optional, text, uuid } from '../../shared/zodFields';
import { ADDABLE_STEP_TYPES, BRANCHES, GRAPH_PROBLEM_KINDS, WAIT_OUTCOMES, type AddableStepType } from '../../services/automation/automationGraph';
import { MAX_AUTOMATION_STEPS } from '../../services/automation/automationEditing';
import { listenedEventName, STEP_CONFIG_LIMITS, STEP_CONFIG_SCHEMAS } from '../../services/automation/stepConfigs';

export { STEP_CONFIG_SCHEMAS };

/**
 * Request bodies of the workflow definition endpoints (contract section 12). A step's config is
 * checked by its kind's schema in services/automation/stepConfigs.ts (STEP_CONFIG_SCHEMAS), which
 * the step bodies leave as an object. What needs the database (a SEND_EMAIL template belonging to
 * the project, the number of steps) is checked after these by services/automation/automationEditing.ts.
 */
export const AUTOMATION_LIMITS = {
  /** Steps of one workflow, TRIGGER included (checked when a step is added, under the workflow's lock). */
  steps: MAX_AUTOMATION_STEPS,
  name: 200,
  description: 1000,
  stepName: 200,
  /** |x|, |y| of a step's position on the dashboard canvas. */
  position: 10_000_000,
  /** The bounds of the step configs, and of the event name a workflow triggers on. */
  ...STEP_CONFIG_LIMITS,
} as const;

const automationName = singleLine('name', AUTOMATION_LIMITS.name);
const automationDescription = optional(
  text('description').max(AUTOMATION_LIMITS.description, `description must be at most ${AUTOMATION_LIMITS.description} characters`),
);
const bool = (field: string) => z.boolean({ invalid_type_error: `${field} must be true or false`, required_error: `${field} is required` });

export const createAutomationBody = z.object({
  name: automationName,
  description: automationDescription,
  eventName: listenedEventName('eventName'),
  allowReentry: bool('allowReentry').default(false),
});

/**
 * PATCH /workflows/:id. The trigger event is `eventName` or `triggerConfig.eventName` (the shape
 * GET answers); `triggerType` is accepted when it is EVENT, the only kind there is.
 */
export const patchAutomationBody = z
  .object({
    name: automationName.optional(),
    description: automationDescription,
    eventName: listenedEventName('eventName').optional(),
    triggerType: z.literal('EVENT', { errorMap: () => ({ message: 'triggerType must be EVENT' }) }).optional(),
    triggerConfig: z.object({ eventName: listenedEventName('triggerConfig.eventName') }, { invalid_type_error: 'triggerConfig must be an object' }).optional(),
    enabled: bool('enabled').optional(),
    allowReentry: bool('allowReentry').optional(),
  })
  .superRefine((body, ctx) => {
    if (body.eventName !== undefined && body.triggerConfig !== undefined && body.eventName !== body.triggerConfig.eventName) {
      ctx.addIssue({ code: 'custom', path: ['eventName'], message: 'eventName and triggerConfig.eventName disagree; send one of them' });
    }
  })
  .transform(({ triggerConfig, triggerType: _type, ...rest }) => ({ ...rest, eventName: rest.eventName ?? triggerConfig?.eventName }));

export const AUTOMATION_SORTS = ['name', 'createdAt', 'updatedAt'] as const;

/** GET /workflows: the offset pages of templates and campaigns, filterable by `enabled` and trigger `eventName`. */
export const automationListQuery = z.object({
  ...offsetListQuery(AUTOMATION_SORTS),
  enabled: z.enum(['true', 'false'], { errorMap: () => ({ message: 'enabled must be true or false' }) }).optional(),
  eventName: z
    .string({ invalid_type_error: 'eventName must be given once' })
    .max(AUTOMATION_LIMITS.eventName, `eventName must be at most ${AUTOMATION_LIMITS.eventName} characters`)
    .optional(),
});

export const DEFAULT_STEP_NAMES: Record<AddableStepType | 'TRIGGER', string> = {
  TRIGGER: 'Trigger',
  SEND_EMAIL: 'Send email',
  DELAY: 'Delay',
  WAIT_FOR_EVENT: 'Wait for event',
  CONDITION: 'Condition',
  WEBHOOK: 'Webhook',
  UPDATE_CONTACT: 'Update contact',
  EXIT: 'Exit',
};

// ---------------------------------------------------------------------------------------------
// Steps and transitions

const position = z.object(
  {
    x: finiteNumber('position.x').min(-AUTOMATION_LIMITS.position).max(AUTOMATION_LIMITS.position),
    y: finiteNumber('position.y').min(-AUTOMATION_LIMITS.position).max(AUTOMATION_LIMITS.position),
  },
  { invalid_type_error: 'position must be an object { x, y }' },
);

const configObject = z.record(z.unknown(), { invalid_type_error: 'config must be an object', required_error: 'config is required' });

/** POST /workflows/:id/steps; `config` is checked against the kind afterwards (paths under `config.`). */
export const createStepBody = z.object({
  type: z.enum(ADDABLE_STEP_TYPES, {
    errorMap: (issue, ctx) => ({
      message:
        ctx.data === 'TRIGGER'
          ? 'A workflow has exactly one TRIGGER step, created with it; it cannot be added'
          : `type must be one of ${ADDABLE_STEP_TYPES.join(', ')}` + (issue.code === 'invalid_type' && ctx.data === undefined ? ' (type is required)' : ''),
    }),
  }),
  name: singleLine('name', AUTOMATION_LIMITS.stepName).optional(),
  position: position.optional(),
  config: configObject.default({}),
  /** The step shape's top-level templateId (SEND_EMAIL), accepted as well as config.templateId. */
  templateId: z.unknown().optional(),
});

/** PATCH /workflows/:id/steps/:stepId: the kind stays; `config`, when given, replaces the whole config. */
export const patchStepBody = z.object({
  name: singleLine('name', AUTOMATION_LIMITS.stepName).optional(),
  position: position.optional(),
  config: configObject.optional(),
  templateId: z.unknown().optional(),
  type: z.unknown().optional(),
});

/** zod-to-openapi 7 describes `z.enum(…).nullable()` with `null` left out of its `enum`: the list is given whole. */
const withNull = <T extends readonly string[]>(values: T) => ({ enum: [...values, null] });

export const createTransitionBody = z.object({
  fromStepId: uuid('fromStepId'),
  toStepId: uuid('toStepId'),
  branch: enumOf('branch', BRANCHES).nullable().optional().openapi(withNull(BRANCHES)),
  waitOutcome: enumOf('waitOutcome', WAIT_OUTCOMES).nullable().optional().openapi(withNull(WAIT_OUTCOMES)),
});

export const deleteStepQuery = z.object({
  splice: z.enum(['true', 'false'], { errorMap: () => ({ message: 'splice must be true or false' }) }).default('false'),
});

/**
 * POST /workflows/:id/executions: one of `contactId` (uuid) or `email` (an existing contact of the
 * project), and an optional `context` object (the data the steps see as the trigger event's; the
 * contact data limits apply).
 */
export const startExecutionBody = z
  .object({
    contactId: z.string({ invalid_type_error: 'contactId must be a string' }).uuid('contactId must be a uuid').optional(),
    email: emailAddress.optional(),
    context: contactData.optional(),
  })
  .strict()
  .superRefine((body, ctx) => {
    if ((body.contactId === undefined) === (body.email === undefined)) {
      ctx.addIssue({ code: 'custom', path: ['contactId'], message: 'Give exactly one of contactId or email' });
    }
  });

export const executionListQuery = z.object({
  status: enumOf('status', EXECUTION_STATUSES).optional(),
  ...offsetPageFields,
});

// ---------------------------------------------------------------------------------------------
// Responses (api/presenters/automationPresenter.ts and executionPresenter.ts are typed by these)

/** Each kind's stored config: the output of its schema in services/automation/stepConfigs.ts, which its input shape describes. */
const STEP_CONFIG_NAMES: Record<AddableStepType, string> = {
  SEND_EMAIL: 'SendEmailStepConfig',
  DELAY: 'DelayStepConfig',
  WAIT_FOR_EVENT: 'WaitForEventStepConfig',
  CONDITION: 'ConditionStepConfig',
  WEBHOOK: 'WebhookStepConfig',
  UPDATE_CONTACT: 'UpdateContactStepConfig',
  EXIT: 'ExitStepConfig',
};

const stepFields = {
  id,
  name: z.string(),
  position: z.object({ x: z.number(), y: z.number() }).strict(),
  /** SEND_EMAIL: the template (also in `config.templateId`); null for the other kinds. */
  templateId: id.nullable(),
  createdAt: timestamp,
  updatedAt: timestamp,
};

const stepOf = <T extends AddableStepType>(type: T) =>
  z.object({ ...stepFields, type: z.literal(type), config: STEP_CONFIG_SCHEMAS[type].openapi(STEP_CONFIG_NAMES[type]) }).strict();

/** A step of a workflow's graph; its `config` is its kind's. */
export const stepResponse = z
  .discriminatedUnion('type', [
    z
      .object({
        ...stepFields,
        type: z.literal('TRIGGER'),
        config: freeFormObject.describe('The TRIGGER step starts on the workflow’s `triggerConfig.eventName`; its config holds nothing else'),
      })
      .strict(),
    stepOf('SEND_EMAIL'),
    stepOf('DELAY'),
    stepOf('WAIT_FOR_EVENT'),
    stepOf('CONDITION'),
    stepOf('WEBHOOK'),
    stepOf('UPDATE_CONTACT'),
    stepOf('EXIT'),
  ])
  .openapi('WorkflowStep');

/** A transition; `branch` is set only out of a CONDITION, `waitOutcome` only out of a WAIT_FOR_EVENT. */
export const transitionResponse = z
  .object({
    id,
    fromStepId: id,
    toStepId: id,
    branch: z.enum(BRANCHES).nullable().openapi(withNull(BRANCHES)),
    waitOutcome: z.enum(WAIT_OUTCOMES).nullable().openapi(withNull(WAIT_OUTCOMES)),
    createdAt: timestamp,
  })
  .strict()
  .openapi('WorkflowTransition');

/** Why the graph cannot run (an enabled workflow has none). */
export const graphProblem = z
  .object({
    kind: z.enum(GRAPH_PROBLEM_KINDS),
    message: z.string(),
    stepId: id.optional(),
    transitionId: id.optional(),
    stepIds: z.array(id).optional().describe('cycle_without_pause: the steps of the cycle'),
  })
  .strict()
  .openapi('WorkflowProblem');

const automationFields = {
  id,
  name: z.string(),
  description: z.string().nullable(),
  triggerType: z.literal('EVENT'),
  triggerConfig: z.object({ eventName: z.string() }).strict(),
  enabled: z.boolean(),
  allowReentry: z.boolean(),
  firstExecutionAt: nullableTimestamp.describe('When the first execution started; from then on the trigger event is fixed'),
  projectId: id,
  createdAt: timestamp,
  updatedAt: timestamp,
};

/** How many executions a workflow has in each status (every status named, zero included). */
export const executionCountsResponse = z
  .object(Object.fromEntries(EXECUTION_STATUSES.map((status) => [status, z.number().int()])) as Record<(typeof EXECUTION_STATUSES)[number], z.ZodNumber>)
  .strict()
  .openapi('WorkflowExecutionCounts');

/** A workflow in GET /workflows: without its graph, with the number of its steps (TRIGGER included) and of its executions by status. */
export const automationSummaryResponse = z
  .object({ ...automationFields, stepCount: z.number().int(), executionCounts: executionCountsResponse })
  .strict()
  .openapi('WorkflowSummary');

export const automationListResponse = offsetPage(automationSummaryResponse);

/** A workflow with its graph and what stops the graph from running. */
export const automationResponse = z
  .object({ ...automationFields, steps: z.array(stepResponse), transitions: z.array(transitionResponse), problems: z.array(graphProblem) })
  .strict()
  .openapi('Workflow');

/** GET /workflows/fields (services/automation/automationFields.ts). */
export const automationFieldsResponse = z
  .object({
    contact: z.array(z.object({ field: z.string(), type: z.string() }).strict()),
    data: z.array(z.object({ field: z.string(), type: z.string(), coverage: z.number() }).strict()),
    events: z.array(z.object({ name: z.string(), fields: z.array(z.object({ field: z.string(), type: z.string() }).strict()) }).strict()),
  })
  .strict()
  .openapi('WorkflowFields');

/** One step an execution went through. */
export const executionStepResponse = z
  .object({
    sequence: z.number().int(),
    stepId: id,
    type: z.string().describe('The step’s kind (TRIGGER, SEND_EMAIL, …)'),
    status: z.enum(['RUNNING', 'WAITING', 'COMPLETED', 'FAILED', 'SKIPPED', 'CANCELLED']),
    startedAt: timestamp,
    completedAt: nullableTimestamp,
    output: z.unknown().describe('What the step produced (a CONDITION’s branch, a WEBHOOK’s status, …)'),
    error: z.string().nullable(),
  })
  .strict();

const executionFields = {
  id,
  workflowId: id,
  contactId: id,
  contactEmail: z.string().nullable().describe('The email of the contact it runs for; null when that contact was deleted'),
  status: z.enum(EXECUTION_STATUSES),
  currentStepId: id.nullable(),
  context: freeFormObject.describe('The data the steps see as the trigger event’s'),
  exitReason: z.string().nullable(),
  error: z.string().nullable(),
  triggerEventId: id.nullable(),
  waitingForEvent: z.string().nullable(),
  waitUntil: nullableTimestamp,
  temporalWorkflowId: z
    .string()
    .describe(
      'The id of the Temporal workflow that runs this execution (never reused), to find its run in the Temporal UI: ' +
        '`<temporalUi.url>/namespaces/<temporalUi.namespace>/workflows/<temporalWorkflowId>` with GET /config’s `temporalUi`',
    ),
  startedAt: timestamp,
  completedAt: nullableTimestamp,
  updatedAt: timestamp,
};

/** An execution as lists show it, without its step history. */
export const executionSummaryResponse = z.object(executionFields).strict().openapi('WorkflowExecutionSummary');

/** An execution with its step history, oldest step first. */
export const executionResponse = z
  .object({ ...executionFields, steps: z.array(executionStepResponse) })
  .strict()
  .openapi('WorkflowExecution');

export const executionListResponse = offsetPage(executionSummaryResponse);

export const cancelAllExecutionsResponse = z.object({ cancelled: z.number().int().describe('Executions cancelled') }).strict();
