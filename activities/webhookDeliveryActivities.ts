import { CancelledFailure, Context } from '@temporalio/activity';
import type { ActivityDeps } from './deps';
import type { CpuStarvation } from '../lib/process/cpuStarvation';
import { runWebhookDelivery, type DeliveryRunResult } from '../services/webhooks/webhookDelivery';

/** Outbound webhooks (contract 18): one delivery run of an endpoint. */
export function createWebhookDeliveryActivities(
  deps: Pick<ActivityDeps, 'config' | 'orm' | 'logger' | 'webhookWakeups'> & {
    /** A webhooks-only process at low priority: delivery waits while mail has the cores. */
    starvation?: CpuStarvation;
  },
) {
  return {
    async deliverDueWebhookMessages(input: { endpointId: string }): Promise<DeliveryRunResult> {
      const context = Context.current();
      if (!deps.webhookWakeups) throw new Error('webhook delivery runs only on a worker with webhook wake-ups (createWorker makes them)');
      const wakeups = deps.webhookWakeups;
      const result = await runWebhookDelivery(
        {
          config: deps.config,
          orm: deps.orm,
          logger: deps.logger,
          register: (endpointId) => wakeups.register(endpointId),
          heartbeat: () => context.heartbeat(),
          yieldToMail: deps.starvation ? () => deps.starvation!.yieldWhileStarved() : undefined,
          cancelled: context.cancellationSignal,
        },
        input.endpointId,
      );
      // Stopped by the workflow's cancellation (the endpoint deleted or disabled), after its attempts under way ended.
      if (context.cancellationSignal.aborted) throw new CancelledFailure('webhook delivery cancelled');
      return result;
    },
  };
}

export type WebhookDeliveryActivities = ReturnType<typeof createWebhookDeliveryActivities>;
