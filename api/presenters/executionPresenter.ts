import type { z } from 'zod';
import type { ExecutionStepRow, ExecutionWithContactRow } from '../../db/automations/executionRepository';
import type { executionResponse, executionSummaryResponse } from '../schemas/automationSchemas';
import { executionWorkflowId } from '../../services/automation/executionStarts';

/** The execution of contract section 12 (with its contact's email): as lists show it, or with its step history when given. */
export function serializeExecution(execution: ExecutionWithContactRow): z.input<typeof executionSummaryResponse>;
export function serializeExecution(execution: ExecutionWithContactRow, steps: ExecutionStepRow[]): z.input<typeof executionResponse>;
export function serializeExecution(
  execution: ExecutionWithContactRow,
  steps?: ExecutionStepRow[],
): z.input<typeof executionSummaryResponse | typeof executionResponse> {
  return {
    id: execution.id,
    workflowId: execution.automationId,
    contactId: execution.contactId,
    contactEmail: execution.contactEmail,
    status: execution.status,
    currentStepId: execution.currentStepId,
    context: execution.context,
    exitReason: execution.exitReason,
    error: execution.error,
    triggerEventId: execution.triggerEventId,
    waitingForEvent: execution.waitingForEvent,
    waitUntil: execution.waitUntil,
    temporalWorkflowId: executionWorkflowId(execution.id),
    ...(steps
      ? {
          steps: steps.map((s) => ({
            sequence: s.sequence,
            stepId: s.stepId,
            type: s.stepType,
            status: s.status,
            startedAt: s.startedAt,
            completedAt: s.completedAt,
            output: s.output,
            error: s.error,
          })),
        }
      : {}),
    startedAt: execution.startedAt,
    completedAt: execution.completedAt,
    updatedAt: execution.updatedAt,
  };
}
