import { z } from './zod';
import { id, uploadedFile } from './responseFields';

/** POST /uploads/image: one image in the multipart field `file`. */
export const imageUploadBody = z.object({ file: uploadedFile });

/** A stored image (contract 16): `url` serves it to anyone, mail clients included. */
export const uploadResponse = z
  .object({
    id,
    url: z.string().openapi({ format: 'uri' }),
    /** image/png, image/jpeg, image/gif or image/webp, read from the file's bytes. */
    contentType: z.string(),
    /** Bytes. */
    size: z.number().int(),
    width: z.number().int(),
    height: z.number().int(),
  })
  .strict()
  .openapi('Upload');
