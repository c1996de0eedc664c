import type { z } from 'zod';
import type { JobRow } from '../../db/jobs/jobRepository';
import type { jobResponse } from '../schemas/contactSchemas';

/** The job record of contract section 5. */
export function serializeJob(job: JobRow): z.input<typeof jobResponse> {
  const progress = job.status === 'COMPLETED' ? 100 : job.total ? Math.floor((job.processed / job.total) * 100) : 0;
  return {
    id: job.id,
    type: job.type,
    status: job.status,
    progress,
    total: job.total,
    processed: job.processed,
    succeeded: job.succeeded,
    failed: job.failed,
    errors: job.errors,
    ...(job.error ? { error: job.error } : {}),
    createdAt: job.createdAt,
    startedAt: job.startedAt,
    completedAt: job.completedAt,
  };
}
