import type { DefinitionTransition } from '../db/workflows/executionRepository';

/**
 * The step after `fromStepId` for an outcome: a CONDITION's `yes`/`no` takes the edge of that
 * branch; a WAIT_FOR_EVENT's EVENT/TIMEOUT takes the edge marked with it, else its unmarked edge
 * (a timeout without a TIMEOUT edge carries on along the main path); every other step takes its
 * unmarked edge. Null: the walk ends there.
 */
export function nextStepId(transitions: DefinitionTransition[], fromStepId: string, outcome?: 'yes' | 'no' | 'EVENT' | 'TIMEOUT'): string | null {
  const out = transitions.filter((t) => t.fromStepId === fromStepId);
  const plain = out.find((t) => !t.branch && !t.waitOutcome);
  if (outcome === 'yes' || outcome === 'no') return out.find((t) => t.branch === outcome)?.toStepId ?? null;
  if (outcome === 'EVENT' || outcome === 'TIMEOUT') return (out.find((t) => t.waitOutcome === outcome) ?? plain)?.toStepId ?? null;
  return plain?.toStepId ?? null;
}
