import { z } from 'zod';
import { uuidPattern } from '../http/validation';
import { instant, limitParam } from './analyticsSchemas';
import { ACTIVITY_TYPES, type ActivityType } from '../../db/analytics/activityRepository';

export const typeList = z
  .string()
  .max(1000)
  .transform((s) =>
    s
      .split(',')
      .map((t) => t.trim())
      .filter(Boolean),
  )
  .superRefine((types, ctx) => {
    const unknown = types.filter((t) => !(ACTIVITY_TYPES as readonly string[]).includes(t));
    if (unknown.length) ctx.addIssue({ code: 'custom', message: `Unknown activity type: ${unknown.slice(0, 5).join(', ')}. GET /activity/types lists them` });
    if (!types.length) ctx.addIssue({ code: 'custom', message: 'Name at least one activity type' });
  })
  .transform((types) => new Set(types as ActivityType[]));

export const feedQuery = z.object({
  types: typeList.optional(),
  contactId: z.string().regex(uuidPattern, 'Must be a contact id (UUID)').optional(),
  start: instant.optional(),
  end: instant.optional(),
  limit: limitParam(50, 100),
  cursor: z.string().max(1000).optional(),
});

/** The cursor remembers where the page ended and the window's start, so later pages keep it. */
export const feedCursor = z.object({
  t: z.string().regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/),
  id: z.string().regex(uuidPattern),
  type: z.enum(ACTIVITY_TYPES),
  s: z.string().datetime(),
});

export const upcomingQuery = z.object({ limit: limitParam(50, 100) });
