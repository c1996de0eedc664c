import type { z } from 'zod';
import type { SegmentRow } from '../../db/segments/segmentRepository';
import type { segmentResponse } from '../schemas/segmentSchemas';

/** The API shape of a segment (specification "Segment"); `slug` names its entry/exit events. */
export function serializeSegment(segment: SegmentRow): z.input<typeof segmentResponse> {
  return {
    id: segment.id,
    name: segment.name,
    description: segment.description,
    type: segment.type,
    condition: segment.condition,
    trackMembership: segment.trackMembership,
    memberCount: segment.memberCount,
    slug: segment.slug,
    projectId: segment.projectId,
    createdAt: segment.createdAt,
    updatedAt: segment.updatedAt,
  };
}
