import type { EntityManager } from '@mikro-orm/postgresql';
import { z } from 'zod';
import type { FieldError } from '../http/errors';

/**
 * PLACEHOLDER until db/conditions/ (helper `segments`) is merged: the same two exports as the
 * condition compiler (`conditionTreeSchema`, `validateConditionTree`), checking the structure of
 * a condition tree only (contract section 10: logic AND/OR, groups with filters and/or nested
 * conditions). At merge, point the import in api/schemas/campaignSchemas.ts at db/conditions/
 * and delete this file.
 */
const filterSchema = z.object({
  field: z.string().min(1).max(300),
  operator: z.string().min(1).max(50),
  value: z.unknown().optional(),
  unit: z.string().max(20).optional(),
});

interface Tree {
  logic: 'AND' | 'OR';
  groups: Array<{ filters?: z.infer<typeof filterSchema>[]; conditions?: Tree }>;
}

const treeSchema: z.ZodType<Tree> = z.lazy(() =>
  z.object({
    logic: z.enum(['AND', 'OR']),
    groups: z
      .array(
        z
          .object({ filters: z.array(filterSchema).max(100).optional(), conditions: treeSchema.optional() })
          .refine((g) => (g.filters?.length ?? 0) > 0 || g.conditions !== undefined, 'A group needs filters or nested conditions'),
      )
      .min(1)
      .max(100),
  }),
);

// Recursion is bounded: api/middleware/jsonBody.ts refuses bodies nested deeper than 32 levels.
export const conditionTreeSchema = treeSchema;

export async function validateConditionTree(_em: EntityManager, _projectId: string, _tree: unknown, _options: { selfSegmentId?: string; path?: string } = {}): Promise<FieldError[]> {
  return [];
}
