import { z } from 'zod';
import { pageLimit } from './paging';
import { emailAddress, singleLineString } from './commonFields';

const description = z.string({ invalid_type_error: 'description must be a string' }).max(500).nullable().optional();

const trackMembership = z.boolean({ invalid_type_error: 'trackMembership must be a boolean' }).optional();

export const createSegmentBody = z.object({
  name: singleLineString(100),
  description,
  type: z.enum(['DYNAMIC', 'STATIC']).default('DYNAMIC'),
  condition: z.unknown().optional(),
  trackMembership,
});

export const patchSegmentBody = z.object({
  name: singleLineString(100).optional(),
  description,
  condition: z.unknown().optional(),
  trackMembership,
});

export const addSegmentMembersBody = z.object({
  emails: z.array(emailAddress).min(1, 'emails needs at least one address').max(500, 'At most 500 emails per call'),
  createMissing: z.boolean().optional(),
  subscribed: z.boolean().optional(),
});

export const removeSegmentMembersBody = z.object({ emails: z.array(emailAddress).min(1).max(500, 'At most 500 emails per call') });

export const segmentPageQuery = z.object({
  page: z.coerce.number().int().min(1).catch(1).default(1),
  pageSize: pageLimit,
});
