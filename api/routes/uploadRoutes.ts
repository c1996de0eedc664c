import crypto from 'node:crypto';
import Router from '@koa/router';
import type { z } from 'zod';
import type { ApiDeps, AppState } from '../state';
import { ApiError, notFound } from '../../lib/errors';
import { keyAuthenticated } from '../auth/apiKey';
import { consumeMultipartFile } from '../http/multipartFile';
import { IMAGE_FORMATS, ImageRejection, inspectImage } from '../../lib/images/inspectImage';
import { ObjectStoreError } from '../../lib/objectStorage/objectStore';
import { uploadRepository, type UploadRecord } from '../../db/uploads/uploadRepository';
import { imageUploadBody, uploadResponse } from '../schemas/uploadSchemas';
import { describedRoutes } from '../openapi/describedRouter';

/** Contract 16: an uploaded image is at most 5 MB. */
export const MAX_IMAGE_BYTES = 5 * 1024 * 1024;

/** The id is the content's name for ever (a new image gets a new id), so caches may keep it a year. */
const CACHE_CONTROL = 'public, max-age=31536000, immutable';

const SERVED_NAME = /^([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.([a-z]+)$/;

const extensionOf = (contentType: string) => Object.values(IMAGE_FORMATS).find((f) => f.contentType === contentType)?.extension;

const storageUnavailable = (err: ObjectStoreError) =>
  new ApiError(503, 'OBJECT_STORAGE_UNAVAILABLE', 'The image could not be stored right now; try again shortly', { details: { reason: err.message } });

/**
 * If-None-Match against the upload's ETag (RFC 9110 13.1.2, weak comparison). Not Koa's
 * ctx.fresh: it ignores validators on requests that also say `Cache-Control: no-cache`, which
 * fetch adds to every conditional request, though answering 304 there is exactly right.
 */
function matchesEtag(header: string, id: string): boolean {
  if (!header) return false;
  return header.split(',').some((tag) => {
    const t = tag.trim();
    return t === '*' || t.replace(/^W\//, '') === `"${id}"`;
  });
}

/**
 * POST /uploads/image (secret key) stores a PNG, JPEG, GIF or WebP for template bodies;
 * GET /uploads/<id>.<ext> serves it to anyone (mail clients fetch it without credentials).
 */
export function uploadRoutes(deps: ApiDeps) {
  const { config, logger, objectStore: store } = deps;
  const router = new Router<AppState>();
  const route = describedRoutes(router, { tag: 'Uploads', access: 'secret' });

  /**
   * The file is read into memory (at most 5 MB; reading stops one byte past that), judged by its
   * bytes alone, and only then written: to the store first, then the row that makes it servable.
   * A refused file is never written anywhere.
   */
  route.post(
    '/uploads/image',
    {
      summary: 'Upload an image',
      description:
        'A PNG, JPEG, GIF or WebP of at most 5 MB in the multipart field `file` (exactly one file), for template and campaign bodies. ' +
        'Its type is read from its bytes, not from its name or the declared type. The answer’s `url` serves it to anyone.',
      body: { schema: imageUploadBody, contentType: 'multipart/form-data' },
      responses: { 201: { description: 'The stored image', schema: uploadResponse } },
    },
    ...keyAuthenticated('secret', deps),
    async (ctx) => {
      const projectId = ctx.state.project!.id;
      const bytes = await consumeMultipartFile(
        ctx,
        {
          field: 'file',
          maxBytes: MAX_IMAGE_BYTES,
          tooLarge: () => new ApiError(400, 'FILE_TOO_LARGE', 'The image may be at most 5 MB'),
          extraFiles: () => new ApiError(400, 'TOO_MANY_FILES', 'Send exactly one image per request, in the multipart field "file"'),
        },
        async (file) => Buffer.concat(await file.toArray()),
      );
      let image;
      try {
        image = inspectImage(bytes);
      } catch (err) {
        if (err instanceof ImageRejection) throw new ApiError(400, err.code, err.message);
        throw err;
      }

      const id = crypto.randomUUID();
      const key = `${projectId}/${id}.${image.extension}`;
      try {
        await store.put(key, bytes, image.contentType);
      } catch (err) {
        if (!(err instanceof ObjectStoreError)) throw err;
        logger.error({ err, key, requestId: ctx.state.requestId }, 'could not store an uploaded image');
        throw storageUnavailable(err);
      }
      let upload: UploadRecord;
      try {
        upload = await uploadRepository.insert(ctx.state.em, {
          id,
          projectId,
          key,
          contentType: image.contentType,
          size: bytes.length,
          width: image.width,
          height: image.height,
        });
      } catch (err) {
        // Without its row the file would never be served: remove it rather than leave it behind.
        await store.delete([key]).catch((deleteErr) => logger.warn({ err: deleteErr, key }, 'could not remove the file of an upload that was not recorded'));
        throw err;
      }
      ctx.status = 201;
      ctx.body = {
        id: upload.id,
        url: `${config.publicUrl}/uploads/${upload.id}.${image.extension}`,
        contentType: upload.contentType,
        size: upload.size,
        width: upload.width,
        height: upload.height,
      } satisfies z.input<typeof uploadResponse>;
    },
  );

  route.get(
    '/uploads/:name',
    {
      summary: 'Get an uploaded image',
      description:
        'The image at the `url` its upload answered (`<id>.<extension>`), without credentials, so mail clients can show it. ' +
        'It never changes: it may be cached for a year, and `If-None-Match` with its ETag answers 304.',
      access: 'none',
      responses: {
        200: {
          description: 'The image',
          contentType: 'image/*',
          headers: {
            ETag: { description: 'The upload’s id, quoted' },
            'Cache-Control': { description: '`public, max-age=31536000, immutable`' },
          },
        },
        304: { description: 'Not modified: the `If-None-Match` ETag is the image’s' },
      },
    },
    async (ctx) => {
      const match = SERVED_NAME.exec(ctx.params.name);
      const upload = match ? await uploadRepository.find(ctx.state.em, match[1]) : null;
      if (!upload || extensionOf(upload.contentType) !== match![2]) throw notFound('upload', ctx.params.name);

      ctx.set('Cache-Control', CACHE_CONTROL);
      ctx.set('ETag', `"${upload.id}"`);
      ctx.set('Last-Modified', upload.createdAt.toUTCString());
      ctx.set('X-Content-Type-Options', 'nosniff');
      // Only ever an image: nothing in the response may run or load anything, even if opened directly.
      ctx.set('Content-Security-Policy', "default-src 'none'; sandbox");
      // Mail clients and web pages on other origins embed these.
      ctx.set('Cross-Origin-Resource-Policy', 'cross-origin');
      ctx.type = upload.contentType;
      if (matchesEtag(ctx.get('If-None-Match'), upload.id)) {
        ctx.status = 304;
        return;
      }
      ctx.status = 200;
      if (ctx.method === 'HEAD') {
        ctx.length = upload.size;
        return;
      }
      let stored;
      try {
        stored = await store.get(upload.key);
      } catch (err) {
        if (!(err instanceof ObjectStoreError)) throw err;
        logger.error({ err, key: upload.key, requestId: ctx.state.requestId }, 'could not read an uploaded image');
        throw new ApiError(503, 'OBJECT_STORAGE_UNAVAILABLE', 'The image cannot be read right now; try again shortly');
      }
      if (!stored) {
        logger.error({ key: upload.key, uploadId: upload.id }, 'an upload is recorded but its file is missing from the store');
        throw notFound('upload', ctx.params.name);
      }
      ctx.length = stored.size;
      ctx.body = stored.body;
    },
  );

  return router;
}
