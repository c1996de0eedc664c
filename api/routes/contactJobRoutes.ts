import Router from '@koa/router';
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
import { bulkContactIdsBody } from '../schemas/contactSchemas';

export const MAX_IMPORT_BYTES = 5 * 1024 * 1024;

const bulkTypes: Record<string, JobType> = {
  '/contacts/bulk-subscribe': 'BULK_SUBSCRIBE',
  '/contacts/bulk-unsubscribe': 'BULK_UNSUBSCRIBE',
  '/contacts/bulk-delete': 'BULK_DELETE',
};

/** CSV import and bulk jobs (secret key): each a Temporal workflow over a job record. */
export function contactJobRoutes(deps: ApiDeps) {
  const { temporal, logger } = deps;
  const router = new Router<AppState>();
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
  router.post('/contacts/import', ...auth, async (ctx) => {
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
    ctx.body = { jobId: job.id, status: job.status, total: job.total };
  });

  router.get('/contacts/import/:jobId', ...auth, async (ctx) => {
    const job = isUuid(ctx.params.jobId) ? await jobRepository.find(ctx.state.em, ctx.state.project!.id, ctx.params.jobId, ['IMPORT']) : null;
    if (!job) throw notFound('job', ctx.params.jobId);
    ctx.body = serializeJob(job);
  });

  for (const [path, type] of Object.entries(bulkTypes)) {
    router.post(path, ...auth, async (ctx) => {
      const { contactIds } = parseBody(bulkContactIdsBody, ctx.request.body);
      const ids = [...new Set(contactIds.map((id) => id.toLowerCase()))];
      const projectId = ctx.state.project!.id;
      const job = await jobRepository.create(ctx.state.em, { projectId, type, total: ids.length, input: { contactIds: ids } });
      await startJobWorkflow(ctx, job, 'bulkContactsWorkflow', 'bulk');
      ctx.status = 202;
      ctx.body = { jobId: job.id, status: job.status, total: job.total };
    });
  }

  router.get('/contacts/bulk/:jobId', ...auth, async (ctx) => {
    const job = isUuid(ctx.params.jobId)
      ? await jobRepository.find(ctx.state.em, ctx.state.project!.id, ctx.params.jobId, ['BULK_SUBSCRIBE', 'BULK_UNSUBSCRIBE', 'BULK_DELETE'])
      : null;
    if (!job) throw notFound('job', ctx.params.jobId);
    ctx.body = serializeJob(job);
  });

  return router;
}
