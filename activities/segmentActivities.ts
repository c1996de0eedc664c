import { Context } from '@temporalio/activity';
import type { ActivityDeps } from './deps';
import { recomputeTrackedSegments, type TrackedRecomputeProgress } from '../services/segments/trackedSegmentRecompute';

export type { TrackedRecomputeProgress };

export function createSegmentActivities({ orm, eventTriggers, logger }: ActivityDeps) {
  return {
    /**
     * Recomputes every tracked dynamic segment (services/segments/trackedSegmentRecompute.ts),
     * heartbeating its progress; a retried attempt resumes after the last segment the previous
     * one finished.
     */
    async recomputeTrackedSegments(): Promise<TrackedRecomputeProgress> {
      const context = Context.current();
      return recomputeTrackedSegments({ orm, eventTriggers, logger }, context.info.heartbeatDetails as TrackedRecomputeProgress | undefined, (progress) =>
        context.heartbeat(progress),
      );
    },
  };
}
export type SegmentActivities = ReturnType<typeof createSegmentActivities>;
