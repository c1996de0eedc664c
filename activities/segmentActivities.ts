import { Context } from '@temporalio/activity';
import type { ActivityDeps } from './deps';
import { segmentRepository } from '../db/segments/segmentRepository';

export interface TrackedRecomputeProgress {
  /** The last segment finished (keyset over segments.id). */
  lastSegmentId: string | null;
  segments: number;
  added: number;
  removed: number;
}

/** Segments per page of the walk over every project's tracked segments. */
const SEGMENT_PAGE = 100;

export function createSegmentActivities({ orm, eventTriggers, logger }: ActivityDeps) {
  return {
    /**
     * Recomputes every tracked dynamic segment of every project (conditions over time such as
     * "within 7 days" change without any event): segments in id order, each one page of changes
     * at a time (segmentRepository.recompute), its entry/exit events handed to the triggers after
     * each page. Heartbeats after each segment; a retried attempt resumes after the last segment
     * the previous one finished.
     */
    async recomputeTrackedSegments(): Promise<TrackedRecomputeProgress> {
      const context = Context.current();
      const progress: TrackedRecomputeProgress = (context.info.heartbeatDetails as TrackedRecomputeProgress | undefined) ?? {
        lastSegmentId: null,
        segments: 0,
        added: 0,
        removed: 0,
      };
      for (;;) {
        const em = orm.em.fork();
        const page = await em.execute<Array<{ id: string; project_id: string }>>(
          `select id, project_id from segments where type = 'DYNAMIC' and track_membership and (?::uuid is null or id > ?::uuid) order by id limit ?`,
          [progress.lastSegmentId, progress.lastSegmentId, SEGMENT_PAGE],
        );
        for (const { id, project_id: projectId } of page) {
          const segment = await segmentRepository.findById(em, projectId, id);
          if (segment?.type === 'DYNAMIC' && segment.trackMembership) {
            try {
              const result = await segmentRepository.recompute(em, segment, {
                emitEvents: true,
                onPage: async (events) => {
                  await eventTriggers.afterEventsRecorded(projectId, events);
                  context.heartbeat(progress);
                },
              });
              progress.added += result.added;
              progress.removed += result.removed;
            } catch (err) {
              // One segment that cannot be computed must not hold up the others.
              logger.error({ err, segmentId: id, projectId }, 'tracked segment recompute failed');
            }
          }
          progress.segments++;
          progress.lastSegmentId = id;
          context.heartbeat(progress);
        }
        if (page.length < SEGMENT_PAGE) return progress;
      }
    },
  };
}
export type SegmentActivities = ReturnType<typeof createSegmentActivities>;
