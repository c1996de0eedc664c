import { z } from 'zod';
import { extendZodWithOpenApi } from '@asteasolutions/zod-to-openapi';

// The API description's generator reads names and examples through `.openapi()` on zod's
// prototype (it changes no parsing). Schemas that name a component (`.openapi('Contact')`) import
// `z` from here, so the method exists before they are built, whatever the import order.
extendZodWithOpenApi(z);

export { z };

/**
 * `schema.catch(fallback)` in a form the description can show (zod-to-openapi 7 cannot describe
 * `.catch()`): a value the schema refuses becomes `fallback`, and the description shows `schema`.
 */
export function withFallback<T extends z.ZodTypeAny>(schema: T, fallback: z.input<T>) {
  return z.preprocess((value) => (schema.safeParse(value).success ? value : fallback), schema);
}
