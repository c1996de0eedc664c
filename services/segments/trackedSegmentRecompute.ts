import type { EntityManager } from '@mikro-orm/postgresql';
import type { Orm } from '../../db/orm';
import type { EventTriggers } from '../events/eventTriggers';
import type { Logger } from '../../lib/logger';
import { segmentRepository, type SegmentRow } from '../../db/segments/segmentRepository';

export interface TrackedRecomputeProgress {
  /** The last segment finished (keyset over segments.id). */
  lastSegmentId: string | null;
  segments: number;
  added: number;
  removed: number;
}

/** Segments per page of the walk over every project's tracked segments. */
const SEGMENT_PAGE = 100;

export interface TrackedRecomputeDeps {
  orm: Orm;
  eventTriggers: EventTriggers;
  logger: Pick<Logger, 'error'>;
}

/**
 * Recomputes every tracked dynamic segment of every project (conditions over time such as
 * "within 7 days" change without any event): segments in id order, each one page of changes at a
 * time (segmentRepository.recompute), its entry/exit events handed to the triggers after each
 * page. Reports `progress` after each page and each segment (a Temporal activity's heartbeats);
 * started from a reported progress, it resumes after the last segment finished.
 */
export async function recomputeTrackedSegments(
  deps: TrackedRecomputeDeps,
  from: TrackedRecomputeProgress | undefined,
  report: (progress: TrackedRecomputeProgress) => void,
): Promise<TrackedRecomputeProgress> {
  const { orm, eventTriggers, logger } = deps;
  const progress: TrackedRecomputeProgress = from ?? { lastSegmentId: null, segments: 0, added: 0, removed: 0 };
  for (;;) {
    const em = orm.em.fork();
    const page = await segmentRepository.trackedPage(em, progress.lastSegmentId, SEGMENT_PAGE);
    for (const { id, projectId } of page) {
      const segment = await segmentRepository.findById(em, projectId, id);
      if (segment?.type === 'DYNAMIC' && segment.trackMembership) {
        try {
          const result = await segmentRepository.recompute(em, segment, {
            emitEvents: true,
            onPage: async (events) => {
              await eventTriggers.afterEventsRecorded(projectId, events);
              report(progress);
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
      report(progress);
    }
    if (page.length < SEGMENT_PAGE) return progress;
  }
}

/**
 * POST /segments/:id/compute: one tracked segment brought up to date now, each page's entry and
 * exit events handed to the triggers as soon as the page is committed.
 */
export async function recomputeTrackedSegment(
  deps: Pick<TrackedRecomputeDeps, 'eventTriggers'>,
  em: EntityManager,
  segment: SegmentRow,
): Promise<{ added: number; removed: number; total: number }> {
  const result = await segmentRepository.recompute(em, segment, {
    emitEvents: true,
    onPage: (events) => deps.eventTriggers.afterEventsRecorded(segment.projectId, events),
  });
  return { added: result.added, removed: result.removed, total: result.total };
}
