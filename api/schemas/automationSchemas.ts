import { z } from 'zod';
import { emailAddress } from './commonFields';
import { enumOf, offsetListQuery, offsetPageFields, optional, singleLine, text } from './messageContentFields';
import { EXECUTION_STATUSES } from '../../db/automations/executionRepository';
import { contactData } from './contactSchemas';
import { RESERVED_DATA_KEYS } from '../../services/contacts/contactDataRules';
import { conditionTreeIssues, type Operator } from '../../db/conditions/conditionTree';
import { findJsonProblem } from '../../lib/untrustedJson';
import { ADDABLE_STEP_TYPES, BRANCHES, WAIT_OUTCOMES, type AddableStepType } from '../../services/automation/automationGraph';
import { CONDITION_STEP_FIELD_HELP, parseConditionStepField } from '../../services/automation/conditionStepField';
import {
  CONDITION_STEP_OPERATORS,
  DELAY_UNITS,
  delaySeconds,
  RESERVED_WEBHOOK_HEADERS,
  STEP_CONFIG_LIMITS,
  SUBSCRIPTION_ACTIONS,
  WEBHOOK_HEADER_NAME,
  WEBHOOK_METHODS,
  webhookUrlProblem,
  type ConditionConfig,
  type DelayConfig,
  type ExitConfig,
  type SendEmailConfig,
  type UpdateContactConfig,
  type WaitForEventConfig,
  type WebhookConfig,
} from '../../services/automation/stepConfigs';

/**
 * Request bodies of the workflow definition endpoints and the config of every step kind
 * (contract section 12), as zod schemas over the step-config rules of
 * services/automation/stepConfigs.ts (kinds' values, limits, stored shapes). What needs the
 * database (a SEND_EMAIL template belonging to the project) is checked by the route after these.
 */
export const AUTOMATION_LIMITS = {
  /** Steps of one workflow, TRIGGER included: far above any real automation, and a bound on every graph check. */
  steps: 500,
  name: 200,
  description: 1000,
  eventName: 200,
  stepName: 200,
  /** |x|, |y| of a step's position on the dashboard canvas. */
  position: 10_000_000,
  /** The bounds of the step configs. */
  ...STEP_CONFIG_LIMITS,
} as const;

const CONTROL = /[\u0000-\u001f\u007f]/;

/**
 * An event name a workflow listens for (its trigger, a WAIT_FOR_EVENT). Unlike /v1/track, the
 * names Mailroom emits itself (`contact.subscribed`, `email.opened`, `segment.<slug>.entry` …) are
 * allowed: they are what many workflows start on.
 */
export const listenedEventName = (field: string) =>
  text(field)
    .refine((s) => !CONTROL.test(s), `${field} must not contain line breaks or other control characters`)
    .transform((s) => s.trim())
    .pipe(
      z.string().min(1, `${field} must not be empty`).max(AUTOMATION_LIMITS.eventName, `${field} must be at most ${AUTOMATION_LIMITS.eventName} characters`),
    );

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

// ---------------------------------------------------------------------------------------------
// Step configs

const uuid = (field: string) =>
  text(field)
    .uuid(`${field} must be a UUID`)
    .transform((s) => s.toLowerCase());

const finiteNumber = (field: string) =>
  z.number({ invalid_type_error: `${field} must be a number`, required_error: `${field} is required` }).finite(`${field} must be a finite number`);

export const sendEmailConfig = z
  .object({
    templateId: uuid('templateId'),
    recipient: z
      .object(
        {
          type: enumOf('recipient.type', ['CONTACT', 'CUSTOM'] as const),
          customEmail: optional(emailAddress),
        },
        { invalid_type_error: 'recipient must be an object' },
      )
      .superRefine((r, ctx) => {
        if (r.type === 'CUSTOM' && !r.customEmail)
          ctx.addIssue({ code: 'custom', path: ['customEmail'], message: 'customEmail is required when recipient.type is CUSTOM' });
        if (r.type === 'CONTACT' && r.customEmail)
          ctx.addIssue({ code: 'custom', path: ['customEmail'], message: 'customEmail is only for recipient.type CUSTOM' });
      })
      .optional(),
  })
  .transform((c): SendEmailConfig => ({
    templateId: c.templateId,
    recipient: c.recipient?.type === 'CUSTOM' ? { type: 'CUSTOM', customEmail: c.recipient.customEmail! } : { type: 'CONTACT' },
  }));

/** DELAY: fractions allowed (0.1 minute is six seconds), at most 365 days in all. */
export const delayConfig = z
  .object({
    amount: finiteNumber('amount').positive('amount must be greater than 0'),
    unit: enumOf('unit', DELAY_UNITS),
  })
  .superRefine((c, ctx) => {
    if (delaySeconds(c) > AUTOMATION_LIMITS.maxWaitSeconds) {
      ctx.addIssue({ code: 'too_big', type: 'number', maximum: 365, inclusive: true, path: ['amount'], message: 'A delay is at most 365 days' });
    }
  })
  .transform((c): DelayConfig => ({ amount: c.amount, unit: c.unit }));

export const waitForEventConfig = z
  .object({
    eventName: listenedEventName('eventName'),
    timeout: finiteNumber('timeout')
      .positive('timeout must be a positive number of seconds')
      .max(AUTOMATION_LIMITS.maxWaitSeconds, `timeout is at most ${AUTOMATION_LIMITS.maxWaitSeconds} seconds (365 days)`)
      .nullable()
      .optional(),
  })
  .transform((c): WaitForEventConfig => (c.timeout == null ? { eventName: c.eventName } : { eventName: c.eventName, timeout: c.timeout }));

/**
 * CONDITION: `{ field, operator, value?, unit? }`. The field's namespace is checked here; the
 * operator and value by the condition tree's own rules, on the tree field the step field stands for.
 */
export const conditionConfig = z
  .object({
    field: text('field').max(AUTOMATION_LIMITS.conditionField, `field must be at most ${AUTOMATION_LIMITS.conditionField} characters`),
    operator: z.enum(CONDITION_STEP_OPERATORS as [Operator, ...Operator[]], {
      errorMap: () => ({ message: `operator must be one of ${CONDITION_STEP_OPERATORS.join(', ')}` }),
    }),
    value: z.unknown().optional(),
    unit: z.unknown().optional(),
  })
  .superRefine((c, ctx) => {
    const parsed = parseConditionStepField(c.field);
    if (!parsed) {
      ctx.addIssue({ code: 'custom', path: ['field'], message: CONDITION_STEP_FIELD_HELP });
      return;
    }
    const filter: Record<string, unknown> = { field: parsed.treeField, operator: c.operator };
    if (c.value !== undefined) filter.value = c.value;
    if (c.unit !== undefined) filter.unit = c.unit;
    for (const issue of conditionTreeIssues({ logic: 'AND', groups: [{ filters: [filter] }] })) {
      const last = issue.path[issue.path.length - 1];
      const path = last === 'field' ? ['field'] : typeof last === 'string' ? [last] : [];
      ctx.addIssue({ code: 'custom', path, message: issue.message.replace(parsed.treeField, c.field), params: { code: issue.code } });
    }
  })
  .transform((c) => {
    const out: Record<string, unknown> = { field: c.field, operator: c.operator };
    if (c.value !== undefined) out.value = c.value;
    if (c.unit !== undefined) out.unit = c.unit;
    return out as unknown as ConditionConfig;
  });

export const webhookConfig = z
  .object({
    url: text('url')
      .trim()
      .max(AUTOMATION_LIMITS.webhookUrl, `url must be at most ${AUTOMATION_LIMITS.webhookUrl} characters`)
      .superRefine((url, ctx) => {
        const problem = webhookUrlProblem(url);
        if (problem) ctx.addIssue({ code: 'invalid_string', validation: 'url', message: problem });
      }),
    method: z
      .string({ invalid_type_error: 'method must be a string' })
      .transform((m) => m.toUpperCase())
      .pipe(enumOf('method', WEBHOOK_METHODS))
      .default('POST'),
    headers: z
      .record(
        text('header value')
          .max(AUTOMATION_LIMITS.webhookHeaderValue, `Header values are at most ${AUTOMATION_LIMITS.webhookHeaderValue} characters`)
          .refine((v) => !/[\r\n\u0000]/.test(v), 'Header values must not contain CR, LF or NUL'),
        { invalid_type_error: 'headers must be an object of header names and string values' },
      )
      .superRefine((headers, ctx) => {
        const names = Object.keys(headers);
        if (names.length > AUTOMATION_LIMITS.webhookHeaders)
          ctx.addIssue({
            code: 'too_big',
            type: 'array',
            maximum: AUTOMATION_LIMITS.webhookHeaders,
            inclusive: true,
            message: `At most ${AUTOMATION_LIMITS.webhookHeaders} headers`,
          });
        const seen = new Set<string>();
        for (const name of names) {
          if (!WEBHOOK_HEADER_NAME.test(name) || name.length > AUTOMATION_LIMITS.webhookHeaderName) {
            ctx.addIssue({
              code: 'custom',
              path: [name],
              message: `Header names are 1-${AUTOMATION_LIMITS.webhookHeaderName} token characters (letters, digits, - and the like; no spaces, colons, CR or LF)`,
            });
          } else if (RESERVED_WEBHOOK_HEADERS.has(name.toLowerCase())) {
            ctx.addIssue({ code: 'custom', path: [name], message: `The ${name} header is set by Mailroom itself` });
          } else if (seen.has(name.toLowerCase())) {
            ctx.addIssue({ code: 'custom', path: [name], message: `The ${name} header is given twice (header names ignore case)` });
          }
          seen.add(name.toLowerCase());
        }
      })
      .optional(),
    body: z.unknown().optional(),
  })
  .superRefine((c, ctx) => {
    if (c.body === undefined || c.body === null) return;
    if (c.method === 'GET') {
      ctx.addIssue({ code: 'custom', path: ['body'], message: 'A GET request carries no body' });
      return;
    }
    if (typeof c.body !== 'string' && (typeof c.body !== 'object' || c.body === null)) {
      ctx.addIssue({
        code: 'invalid_type',
        expected: 'object',
        received: typeof c.body as 'string',
        path: ['body'],
        message: 'body must be a string or a JSON object or array',
      });
      return;
    }
    const problem = findJsonProblem(c.body, { prefix: 'body' });
    if (problem) {
      ctx.addIssue({
        code: 'custom',
        path: problem.path.split('.').slice(1).length ? ['body', ...problem.path.split('.').slice(1)] : ['body'],
        message: problem.message,
      });
      return;
    }
    const size = Buffer.byteLength(typeof c.body === 'string' ? c.body : JSON.stringify(c.body), 'utf8');
    if (size > AUTOMATION_LIMITS.webhookBodyBytes) {
      ctx.addIssue({
        code: 'too_big',
        type: 'string',
        maximum: AUTOMATION_LIMITS.webhookBodyBytes,
        inclusive: true,
        path: ['body'],
        message: `body is at most ${AUTOMATION_LIMITS.webhookBodyBytes / 1024} KB`,
      });
    }
  })
  .transform((c) => {
    const out: WebhookConfig = { url: c.url, method: c.method };
    if (c.headers && Object.keys(c.headers).length) out.headers = c.headers;
    if (c.body !== undefined && c.body !== null) out.body = c.body;
    return out;
  });

/**
 * UPDATE_CONTACT: `updates` obey the contact data rules (sizes, keys, text PostgreSQL can store);
 * reserved keys are dropped silently, as on every other write path. `null` will delete a key and
 * `""` leave it as it is, when the step runs.
 */
export const updateContactConfig = z
  .object({
    updates: contactData.optional(),
    subscriptionAction: enumOf('subscriptionAction', SUBSCRIPTION_ACTIONS).default('none'),
  })
  .transform((c): UpdateContactConfig => {
    const updates: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(c.updates ?? {})) {
      if (!RESERVED_DATA_KEYS.has(key)) Object.defineProperty(updates, key, { value, enumerable: true, writable: true, configurable: true });
    }
    return { updates, subscriptionAction: c.subscriptionAction };
  });

export const exitConfig = z
  .object({
    reason: optional(
      text('reason')
        .refine((s) => !CONTROL.test(s), 'reason must not contain line breaks or other control characters')
        .transform((s) => s.trim())
        .pipe(z.string().max(AUTOMATION_LIMITS.exitReason, `reason must be at most ${AUTOMATION_LIMITS.exitReason} characters`)),
    ),
  })
  .transform((c): ExitConfig => (c.reason ? { reason: c.reason } : {}));

/** The config schema of each kind a client may add. */
export const STEP_CONFIG_SCHEMAS: Record<AddableStepType, z.ZodTypeAny> = {
  SEND_EMAIL: sendEmailConfig,
  DELAY: delayConfig,
  WAIT_FOR_EVENT: waitForEventConfig,
  CONDITION: conditionConfig,
  WEBHOOK: webhookConfig,
  UPDATE_CONTACT: updateContactConfig,
  EXIT: exitConfig,
};

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

export const createTransitionBody = z.object({
  fromStepId: uuid('fromStepId'),
  toStepId: uuid('toStepId'),
  branch: enumOf('branch', BRANCHES).nullable().optional(),
  waitOutcome: enumOf('waitOutcome', WAIT_OUTCOMES).nullable().optional(),
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
