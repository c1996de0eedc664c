import { z } from 'zod';
import { extendZodWithOpenApi } from '@asteasolutions/zod-to-openapi';

// The API description's generator reads names and examples through `.openapi()` on zod's
// prototype (it changes no parsing). Schemas that name a component (`.openapi('Contact')`) import
// `z` from here, so the method exists before they are built, whatever the import order.
extendZodWithOpenApi(z);

export { z };
