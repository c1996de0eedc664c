import { proxyActivities } from '@temporalio/workflow';
import type { SegmentActivities, TrackedRecomputeProgress } from '../activities/segmentActivities';
import { PERIODIC_ACTIVITY_RETRY } from './periodicRetry';

const { recomputeTrackedSegments } = proxyActivities<SegmentActivities>({
  // Under the 5-minute interval; the schedule skips a run while the previous one is open.
  startToCloseTimeout: '4 minutes',
  heartbeatTimeout: '1 minute',
  retry: PERIODIC_ACTIVITY_RETRY,
});

/**
 * Started every 5 minutes by the `<taskQueue>-segment-recompute` schedule: brings every tracked
 * segment up to date with time (conditions such as "triggered within 7 days" change with no event)
 * and emits the entry/exit events of the contacts that joined or left.
 */
export async function trackedSegmentsRecomputeWorkflow(): Promise<TrackedRecomputeProgress> {
  return recomputeTrackedSegments();
}
