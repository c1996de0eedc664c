import { useEffect, useId, useRef } from 'react';
import { useQuery } from '@tanstack/react-query';
import { unwrap } from '../api/client';
import { useCurrentProject } from '../projects/currentProject';
import { ErrorNotice } from '../components/ErrorNotice';
import { Loading } from '../components/Loading';
import { formatNumber } from '../components/format';
import { contactKeys, isRunning, JOB_POLL_MS, type Job } from './contactsApi';

const WHAT: Record<Job['type'], { noun: string; running: string; done: string }> = {
  IMPORT: { noun: 'rows', running: 'Importing', done: 'imported' },
  BULK_SUBSCRIBE: { noun: 'contacts', running: 'Subscribing', done: 'subscribed' },
  BULK_UNSUBSCRIBE: { noun: 'contacts', running: 'Unsubscribing', done: 'unsubscribed' },
  BULK_DELETE: { noun: 'contacts', running: 'Deleting', done: 'deleted' },
};

/** A bulk job's title from the job itself ("Unsubscribing 2 contacts"), or a neutral one while it loads. */
export function bulkJobTitle(job: Job | undefined): string {
  if (!job) return 'Bulk change';
  return `${WHAT[job.type].running} ${formatNumber(job.total)} contact${job.total === 1 ? '' : 's'}`;
}

/** One sentence on where the job is, for the live status line. */
export function jobSummary(job: Job): string {
  const what = WHAT[job.type];
  switch (job.status) {
    case 'QUEUED':
      return `Queued: ${formatNumber(job.total)} ${what.noun} to go.`;
    case 'RUNNING':
      return `${what.running}: ${formatNumber(job.processed)} of ${formatNumber(job.total)} ${what.noun} (${job.progress}%).`;
    case 'COMPLETED':
      return `Finished: ${formatNumber(job.succeeded)} ${what.done}${job.failed > 0 ? `, ${formatNumber(job.failed)} failed` : ''}.`;
    case 'FAILED':
      return `Stopped after ${formatNumber(job.processed)} of ${formatNumber(job.total)} ${what.noun}${job.error ? `: ${job.error}` : '.'}`;
    case 'CANCELLED':
      return `Cancelled after ${formatNumber(job.processed)} of ${formatNumber(job.total)} ${what.noun}.`;
  }
}

interface JobProgressProps {
  jobId: string;
  /** Which GET answers for it: /contacts/import/{jobId} or /contacts/bulk/{jobId}. */
  kind: 'import' | 'bulk';
  /** The card's heading; a function names it from the job once it has loaded (after a reload only its id is known). */
  title: string | ((job: Job | undefined) => string);
  /** Called once when the job ends (to refresh what it changed). */
  onFinished?: (job: Job) => void;
}

/** An import or bulk job, live: a progress bar with its value, a status line, its counts and its errors, refetched every second while it runs. */
export function JobProgress({ jobId, kind, title: titleOf, onFinished }: JobProgressProps) {
  const { project, client } = useCurrentProject();
  const headingId = useId();
  const job = useQuery({
    queryKey: contactKeys.job(project.id, jobId),
    queryFn: () =>
      kind === 'import'
        ? unwrap(client.GET('/contacts/import/{jobId}', { params: { path: { jobId } } }))
        : unwrap(client.GET('/contacts/bulk/{jobId}', { params: { path: { jobId } } })),
    refetchInterval: (query) => (query.state.data && !isRunning(query.state.data) ? false : JOB_POLL_MS),
  });
  const title = typeof titleOf === 'string' ? titleOf : titleOf(job.data);
  const finished = job.data && !isRunning(job.data) ? job.data : undefined;
  const reported = useRef(false);
  useEffect(() => {
    if (finished && !reported.current) {
      reported.current = true;
      onFinished?.(finished);
    }
  }, [finished, onFinished]);

  return (
    <section className="card job" aria-labelledby={headingId}>
      <h2 id={headingId}>{title}</h2>
      {job.isPending ? (
        <Loading />
      ) : job.isError ? (
        <ErrorNotice error={job.error} />
      ) : (
        <>
          <progress
            className={`job-progress${job.data.status === 'FAILED' ? ' job-progress-failed' : ''}`}
            aria-label={`${title}: progress`}
            max={Math.max(job.data.total, 1)}
            value={job.data.total === 0 && !isRunning(job.data) ? 1 : job.data.processed}
          />
          <p role="status" className={job.data.status === 'FAILED' ? 'job-status job-status-failed' : 'job-status'}>
            {jobSummary(job.data)}
          </p>
          {kind === 'import' || job.data.failed > 0 || isRunning(job.data) ? <JobCounts job={job.data} /> : null}
          {job.data.errors.length > 0 ? <JobErrors job={job.data} /> : null}
        </>
      )}
    </section>
  );
}

function JobCounts({ job }: { job: Job }) {
  return (
    <dl className="stats job-stats">
      <div>
        <dt>Total</dt>
        <dd>{formatNumber(job.total)}</dd>
      </div>
      <div>
        <dt>Processed</dt>
        <dd>{formatNumber(job.processed)}</dd>
      </div>
      <div>
        <dt>Succeeded</dt>
        <dd>{formatNumber(job.succeeded)}</dd>
      </div>
      <div>
        <dt>Failed</dt>
        <dd>{formatNumber(job.failed)}</dd>
      </div>
    </dl>
  );
}

function JobErrors({ job }: { job: Job }) {
  const headingId = useId();
  const byRow = job.type === 'IMPORT';
  return (
    <div className="job-errors">
      <h3 id={headingId}>Errors{job.failed > job.errors.length ? ` (the first ${formatNumber(job.errors.length)} of ${formatNumber(job.failed)})` : ''}</h3>
      <div className="table-wrap" role="region" aria-labelledby={headingId} tabIndex={0}>
        <table className="table">
          <thead>
            <tr>
              <th scope="col">{byRow ? 'Row' : 'Contact'}</th>
              <th scope="col">Email</th>
              <th scope="col">Error</th>
            </tr>
          </thead>
          <tbody>
            {job.errors.map((error, index) => (
              <tr key={index}>
                <td className="nowrap">{byRow ? (error.row ?? '') : <code>{error.contactId ?? ''}</code>}</td>
                <td>{error.email ?? ''}</td>
                <td>{error.error}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </div>
  );
}
