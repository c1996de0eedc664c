import { z } from 'zod';
import { singleLineString } from './zodFields';

/**
 * Project request bodies the dashboard's forms validate with, as the API parses them
 * (api/schemas/projectSchemas.ts re-exports them).
 */

/** POST /users/@me/projects: a new project's name. */
export const projectBody = z.object({ name: singleLineString(100) });
