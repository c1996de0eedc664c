import { Context } from '@temporalio/activity';
import type { ActivityDeps } from './deps';
import { failUndeliveredEmails, findUndeliveredGroups } from '../services/sending/undeliveredEmails';
import { deliverRecordedEmails, type DeliveryAttemptResult } from '../services/sending/recordedEmailDelivery';

export type { DeliveryAttemptResult };

export function createEmailDeliveryActivities({ config, orm, mail, logger, eventTriggers }: ActivityDeps) {
  const services = { config, orm, transport: mail, eventTriggers };
  return {
    /** One delivery attempt over recorded emails (services/sending/recordedEmailDelivery.ts), heartbeating after each wave when it runs on the task queue. */
    async deliverEmails(input: { emailIds: string[] }): Promise<DeliveryAttemptResult> {
      const context = Context.current();
      const workflowId = context.info.workflowExecution?.workflowId ?? 'standalone';
      const result = await deliverRecordedEmails(services, input.emailIds, `${workflowId}/${context.info.activityId}`, {
        // A local activity has no heartbeat of its own: its workflow task's timeout stands for it.
        onWave: context.info.isLocal ? undefined : (done) => context.heartbeat({ done }),
        onWait: context.info.isLocal ? undefined : () => context.heartbeat({ waitingForDatabase: true }),
      });
      if (result.retry.length) logger.warn({ emails: result.retry.length, workflowId }, 'temporary delivery failures; retrying later');
      return result;
    },

    /** Gives up on emails whose retries are spent: FAILED with their last error, and `email.failed`. */
    async failUndeliveredEmails(input: { emailIds: string[]; reason: string }): Promise<void> {
      await failUndeliveredEmails(services, orm.em.fork(), input.emailIds, input.reason);
    },

    /** Accepted emails no delivery has touched, grouped by the workflow that should own them (see emailDeliverySweepWorkflow). */
    async findUndeliveredEmails(input: { olderThanSeconds: number; limit: number }) {
      const groups = await findUndeliveredGroups(orm.em.fork(), input.olderThanSeconds, input.limit);
      if (groups.length)
        logger.warn(
          { workflows: groups.length, emails: groups.reduce((n, g) => n + g.emailIds.length, 0) },
          'found accepted mail whose delivery never started; starting it',
        );
      return { groups, retryDelaysSeconds: config.deliveryRetryDelaysSeconds };
    },
  };
}
export type EmailDeliveryActivities = ReturnType<typeof createEmailDeliveryActivities>;
