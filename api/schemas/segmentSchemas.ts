import { withFallback, z } from './zod';
import { pageLimit } from './paging';
import { emailAddress, singleLineString } from './commonFields';
import { id, timestamp } from './responseFields';
import { offsetPage } from './messageContentFields';
import { contactResponse } from './contactSchemas';
import type { ConditionTree } from '../../db/conditions';

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
  page: withFallback(z.coerce.number().int().min(1), 1).default(1),
  pageSize: pageLimit,
});

// Responses.

/**
 * A stored condition tree (segments, FILTERED campaign audiences), as it was given once every check
 * passed. A group's `conditions` is a nested tree of the same shape (at most five deep).
 */
export const conditionTreeResponse = z
  .object({
    logic: z.enum(['AND', 'OR']),
    groups: z.array(
      z.object({
        filters: z
          .array(
            z.object({
              field: z.string().openapi({ description: 'email, subscribed, createdAt, updatedAt, data.<key>, event.<name>, email.<activity> or segment.<id>' }),
              operator: z.string(),
              value: z.unknown().optional(),
              unit: z.unknown().optional().openapi({ description: 'minutes, hours, days, weeks or months, for the operators that take an amount' }),
            }),
          )
          .optional(),
        conditions: z
          .custom<ConditionTree>(() => true)
          .nullable()
          .optional()
          .openapi({ type: ['object', 'null'], description: 'A nested condition tree of this same shape' }),
      }),
    ),
  })
  .openapi('ConditionTree');

/**
 * A condition tree or null. `conditionTreeResponse.nullable()` would be described wrongly (the
 * generator turns the named component itself nullable, or joins null to it with allOf).
 */
export const nullableConditionTree = z.union([conditionTreeResponse, z.null()]);

export const segmentResponse = z
  .object({
    id,
    name: z.string(),
    description: z.string().nullable(),
    type: z.enum(['DYNAMIC', 'STATIC']),
    /** Null for a STATIC segment. */
    condition: nullableConditionTree,
    trackMembership: z.boolean(),
    memberCount: z.number().int(),
    /** Names the entry and exit events of a tracked segment (`segment.<slug>.entry`, `segment.<slug>.exit`). */
    slug: z.string(),
    projectId: id,
    createdAt: timestamp,
    updatedAt: timestamp,
  })
  .strict()
  .openapi('Segment');

export const segmentListResponse = z.array(segmentResponse);

export const segmentContactsResponse = offsetPage(contactResponse);

export const addSegmentMembersResponse = z.object({ added: z.number().int(), created: z.number().int(), notFound: z.array(z.string()) }).strict();

export const removeSegmentMembersResponse = z.object({ removed: z.number().int() }).strict();

export const segmentComputeResponse = z.object({ added: z.number().int(), removed: z.number().int(), total: z.number().int() }).strict();
