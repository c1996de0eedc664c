import { proxyActivities } from '@temporalio/workflow';
import type { InboundActivities } from '../activities/inboundActivities';

export interface InboundMessagesInput {
  messageIds: string[];
}

const { processInboundMessages } = proxyActivities<InboundActivities>({
  startToCloseTimeout: '10 minutes',
  // A killed worker's messages are taken up by another within this long (each message is one heartbeat).
  heartbeatTimeout: '20 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute', backoffCoefficient: 2 },
});

/**
 * Processes a round of messages the inbound listener stored before its 250 (contract 20): each
 * project's copy recorded once, however often the activity is retried.
 */
export async function inboundMessagesWorkflow(input: InboundMessagesInput): Promise<{ processed: number }> {
  return processInboundMessages(input);
}
