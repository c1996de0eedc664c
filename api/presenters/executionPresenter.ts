import type { z } from 'zod';
import type { ExecutionRow, ExecutionStepRow } from '../../db/automations/executionRepository';
import type { executionResponse, executionSummaryResponse } from '../schemas/automationSchemas';
import { executionWorkflowId } from '../../services/automation/executionStarts';

/** The execution of contract section 12: as lists show it, or with its step history when given. */
export function serializeExecution(execution: ExecutionRow): z.input<typeof executionSummaryResponse>;
export function serializeExecution(execution: ExecutionRow, steps: ExecutionStepRow[]): z.input<typeof executionResponse>;
export function serializeExecution(execution: ExecutionRow, steps?: ExecutionStepRow[]): z.input<typeof executionSummaryResponse | typeof executionResponse> {
  return {
    id: execution.id,
    workflowId: execution.automationId,
    contactId: execution.contactId,
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
