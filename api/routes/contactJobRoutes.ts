import Router from '@koa/router';
import type { z } from 'zod';
import type { ApiDeps, AppContext, AppState } from '../state';
import { badRequest, notFound, payloadTooLarge } from '../../lib/errors';
import { isUuid, parseBody } from '../http/validation';
import { keyAuthenticated } from '../auth/apiKey';
import { jobRepository, type JobType } from '../../db/jobs/jobRepository';
import { serializeJob } from '../presenters/jobPresenter';
import { CsvFileError, checkCsvUpload } from '../../services/contacts/csvImport';
import { jobUploadRepository, UploadChunker } from '../../db/jobs/jobUploadRepository';
import { consumeMultipartFile } from '../http/multipartFile';
import { ProjectIdSearchAttribute } from '../../temporal/searchAttributes';
import { startWorkflow, workflowStartLogFields } from '../../temporal/startWorkflow';
import { workflowStartApiError } from '../http/workflowStartErrors';
import { bulkContactIdsBody, contactImportBody, jobResponse, queuedJobResponse } from '../schemas/contactSchemas';
import { describedRoutes } from '../openapi/describedRouter';

export const MAX_IMPORT_BYTES = 5 * 1024 * 1024;

const bulkTypes: Record<string, { type: JobType; summary: string }> = {
  '/contacts/bulk-subscribe': { type: 'BULK_SUBSCRIBE', summary: 'Subscribe contacts in bulk' },
  '/contacts/bulk-unsubscribe': { type: 'BULK_UNSUBSCRIBE', summary: 'Unsubscribe contacts in bulk' },
  '/contacts/bulk-delete': { type: 'BULK_DELETE', summary: 'Delete contacts in bulk' },
};

/** CSV import and bulk jobs (secret key): each a Temporal workflow over a job record. */
export function contactJobRoutes(deps: ApiDeps) {
  const { temporal, logger } = deps;
  const router = new Router<AppState>();
  const route = describedRoutes(router, { tag: 'Contacts', access: 'secret' });
  const auth = keyAuthenticated('secret', deps);

  /**
   * Starts the job's workflow (`<prefix>-<jobId>`, findable by ProjectId in the Temporal UI). If
   * Temporal refuses, the job record is withdrawn (no job is left QUEUED with nothing to run it)
   * and the caller told to retry, or, when retrying cannot help, given a 500.
   */
  async function startJobWorkflow(
    ctx: AppContext,
    job: { id: string },
    workflow: 'importContactsWorkflow' | 'bulkContactsWorkflow',
    prefix: 'import' | 'bulk',
  ) {
    const workflowId = `${prefix}-${job.id}`;
    try {
      await startWorkflow(temporal, workflow, {
        workflowId,
        taskQueue: temporal.taskQueue,
        args: [{ jobId: job.id }],
        typedSearchAttributes: [{ key: ProjectIdSearchAttribute, value: ctx.state.project!.id }],
      });
    } catch (err) {
      logger.error({ ...workflowStartLogFields(err), jobId: job.id, workflowId, requestId: ctx.state.requestId }, 'could not start the job workflow');
      await jobRepository.delete(ctx.state.em, job.id);
      throw workflowStartApiError(err, 'The job could not be queued; try again shortly');
    }
  }

  /**
   * The file is checked (size, UTF-8, quoting, header row) and stored in chunks as it streams in,
   * a piece at a time between other requests; the job is created, with its `total`, only once the
   * whole file proved importable. A refused file leaves nothing behind and queues nothing.
   */
  route.post(
    '/contacts/import',
    {
      summary: 'Import contacts from a CSV file',
      description:
        'A UTF-8 CSV file of at most 5 MB in the multipart field `file`, with a header row that names an `email` column; a `subscribed` column (true/false) is honoured, every other column becomes a data key. ' +
        'The whole file is checked before anything is queued: a file that cannot be imported is refused (400) and leaves nothing behind. ' +
        '202 means the import job is queued; follow it with GET /contacts/import/{jobId}.',
      body: { schema: contactImportBody, contentType: 'multipart/form-data' },
      responses: { 202: { description: 'The import job is queued', schema: queuedJobResponse } },
    },
    ...auth,
    async (ctx) => {
      const projectId = ctx.state.project!.id;
      const em = ctx.state.em;
      const upload = await consumeMultipartFile(
        ctx,
        { field: 'file', maxBytes: MAX_IMPORT_BYTES, tooLarge: () => payloadTooLarge('The CSV file may be at most 5 MB') },
        async (file, { filename }) => {
          const uploadId = await jobUploadRepository.begin(em, projectId, filename);
          const chunker = new UploadChunker((seq, bytes) => jobUploadRepository.appendChunk(em, uploadId, seq, bytes));
          try {
            const csv = await checkCsvUpload(file, (piece) => chunker.add(piece));
            await chunker.flush();
            return { uploadId, filename, rows: csv.rows };
          } catch (err) {
            await jobUploadRepository.discard(em, uploadId);
            if (err instanceof CsvFileError) throw badRequest(err.message);
            throw err;
          }
        },
      );
      const job = await em.transactional(async (tx) => {
        const created = await jobRepository.create(tx, { projectId, type: 'IMPORT', total: upload.rows, input: { filename: upload.filename } });
        await jobUploadRepository.claim(tx, upload.uploadId, created.id);
        return created;
      });
      await startJobWorkflow(ctx, job, 'importContactsWorkflow', 'import');
      ctx.status = 202;
      ctx.body = { jobId: job.id, status: job.status, total: job.total } satisfies z.input<typeof queuedJobResponse>;
    },
  );

  route.get(
    '/contacts/import/:jobId',
    { summary: 'Get an import job', responses: { 200: { description: 'The job and its progress', schema: jobResponse } } },
    ...auth,
    async (ctx) => {
      const job = isUuid(ctx.params.jobId) ? await jobRepository.find(ctx.state.em, ctx.state.project!.id, ctx.params.jobId, ['IMPORT']) : null;
      if (!job) throw notFound('job', ctx.params.jobId);
      ctx.body = serializeJob(job);
    },
  );

  for (const [path, { type, summary }] of Object.entries(bulkTypes)) {
    route.post(
      path,
      {
        summary,
        description: 'Up to 1,000 contact ids. 202 means the job is queued; follow it with GET /contacts/bulk/{jobId}.',
        body: { schema: bulkContactIdsBody },
        responses: { 202: { description: 'The job is queued', schema: queuedJobResponse } },
      },
      ...auth,
      async (ctx) => {
        const { contactIds } = parseBody(bulkContactIdsBody, ctx.request.body);
        const ids = [...new Set(contactIds.map((id) => id.toLowerCase()))];
        const projectId = ctx.state.project!.id;
        const job = await jobRepository.create(ctx.state.em, { projectId, type, total: ids.length, input: { contactIds: ids } });
        await startJobWorkflow(ctx, job, 'bulkContactsWorkflow', 'bulk');
        ctx.status = 202;
        ctx.body = { jobId: job.id, status: job.status, total: job.total } satisfies z.input<typeof queuedJobResponse>;
      },
    );
  }

  route.get(
    '/contacts/bulk/:jobId',
    { summary: 'Get a bulk job', responses: { 200: { description: 'The job and its progress', schema: jobResponse } } },
    ...auth,
    async (ctx) => {
      const job = isUuid(ctx.params.jobId)
        ? await jobRepository.find(ctx.state.em, ctx.state.project!.id, ctx.params.jobId, ['BULK_SUBSCRIBE', 'BULK_UNSUBSCRIBE', 'BULK_DELETE'])
        : null;
      if (!job) throw notFound('job', ctx.params.jobId);
      ctx.body = serializeJob(job);
    },
  );

  return router;
}
