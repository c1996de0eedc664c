import { useCallback, useId, useState, type ChangeEvent } from 'react';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { Link, useSearchParams } from 'react-router';
import { importMapping, previewCsv, type ColumnMapping, type ImportMapping } from '../../../shared/contactImport';
import { unwrap } from '../api/client';
import { queryKeys } from '../api/queries';
import { useCurrentProject } from '../projects/currentProject';
import { ErrorNotice } from '../components/ErrorNotice';
import { PageTitle } from '../components/PageTitle';
import { formatNumber } from '../components/format';
import { JobProgress } from './JobProgress';
import { contactKeys } from './contactsApi';
import './contacts.css';

/** The API's limit on an import's file (POST /contacts/import). */
const MAX_FILE_BYTES = 5 * 1024 * 1024;
/** How much of the file the preview reads: enough for the header and the first rows of any sane file. */
const PREVIEW_BYTES = 256 * 1024;
const PREVIEW_ROWS = 5;

interface ChosenFile {
  file: File;
  mapping: ImportMapping;
  /** Why the file cannot be sent at all (too big, not readable), besides its header's problems. */
  error?: string;
  rows: string[][];
  more: boolean;
}

async function readChosenFile(file: File): Promise<ChosenFile> {
  if (file.size > MAX_FILE_BYTES) {
    return {
      file,
      mapping: { columns: [] },
      rows: [],
      more: false,
      error: `The file is ${formatNumber(Math.ceil(file.size / 1024))} KB; the CSV file may be at most 5 MB.`,
    };
  }
  const bytes = new Uint8Array(await file.slice(0, PREVIEW_BYTES).arrayBuffer());
  let text: string;
  try {
    // A cut at the preview's end may split a character: `stream` keeps that piece back instead of refusing it.
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes, { stream: file.size > PREVIEW_BYTES });
  } catch {
    return { file, mapping: { columns: [] }, rows: [], more: false, error: 'The file is not UTF-8 text; save it as a UTF-8 CSV file.' };
  }
  const preview = previewCsv(text, PREVIEW_ROWS, file.size <= PREVIEW_BYTES);
  if (preview.error) return { file, mapping: { columns: [] }, rows: [], more: false, error: `The CSV could not be read: ${preview.error}.` };
  if (preview.header.length === 0)
    return { file, mapping: { columns: [] }, rows: [], more: false, error: 'The file is empty; it needs a header row with an "email" column.' };
  return { file, mapping: importMapping(preview.header, preview.rows), rows: preview.rows, more: preview.more };
}

/** /contacts/import: choose a CSV, see what each column becomes, import it, and follow the job live (?job= keeps it across reloads). */
export function ImportPage() {
  const { project, client } = useCurrentProject();
  const queryClient = useQueryClient();
  const [searchParams, setSearchParams] = useSearchParams();
  const jobId = searchParams.get('job');
  const [chosen, setChosen] = useState<ChosenFile | null>(null);
  const [reading, setReading] = useState(false);
  const fileId = useId();
  const base = `/projects/${project.id}/contacts`;

  const start = useMutation({
    mutationFn: (file: File) => {
      const form = new FormData();
      form.append('file', file, file.name);
      return unwrap(client.POST('/contacts/import', { body: {}, bodySerializer: () => form }));
    },
    onSuccess: (queued) => {
      setChosen(null);
      setSearchParams({ job: queued.jobId });
    },
  });

  const onFinished = useCallback(
    () =>
      void Promise.all([
        queryClient.invalidateQueries({ queryKey: contactKeys.all(project.id) }),
        queryClient.invalidateQueries({ queryKey: queryKeys.setupState(project.id) }),
      ]),
    [queryClient, project.id],
  );

  async function choose(event: ChangeEvent<HTMLInputElement>) {
    const file = event.target.files?.[0];
    start.reset();
    if (!file) {
      setChosen(null);
      return;
    }
    setReading(true);
    try {
      setChosen(await readChosenFile(file));
    } finally {
      setReading(false);
    }
  }

  const blocked = !chosen || Boolean(chosen.error || chosen.mapping.error);
  return (
    <div className="page">
      <PageTitle parts={['Import contacts', 'Contacts', project.name]} />
      <nav aria-label="Breadcrumb" className="breadcrumb">
        <Link to={base}>Contacts</Link>
      </nav>
      <header className="page-header">
        <h1>Import contacts</h1>
        <p className="muted">
          A UTF-8 CSV file of at most 5 MB whose header row names an <code>email</code> column. A <code>subscribed</code> column (true or false) is honoured;
          every other column becomes a data field. Existing contacts are updated, not duplicated.
        </p>
      </header>

      {jobId ? (
        <>
          <JobProgress key={jobId} jobId={jobId} kind="import" title="Import" onFinished={onFinished} />
          <div className="form-actions">
            <Link className="button button-primary" to={base}>
              Open contacts
            </Link>
            <button type="button" className="button" onClick={() => setSearchParams({})}>
              Import another file
            </button>
          </div>
        </>
      ) : (
        <section className="card" aria-labelledby="import-file-heading">
          <h2 id="import-file-heading">File</h2>
          <div className="field import-file">
            <label htmlFor={fileId}>CSV file</label>
            <input id={fileId} type="file" accept=".csv,text/csv" onChange={(event) => void choose(event)} />
          </div>
          {reading ? (
            <p role="status" className="muted">
              Reading the file…
            </p>
          ) : null}
          {chosen ? <Preview chosen={chosen} /> : null}
          {start.error ? <ErrorNotice error={start.error} title="The file was not imported" /> : null}
          <div className="form-actions card-actions">
            <button
              type="button"
              className="button button-primary"
              disabled={blocked || start.isPending}
              aria-busy={start.isPending || undefined}
              onClick={() => chosen && start.mutate(chosen.file)}
            >
              Import
            </button>
            {chosen && !blocked ? <span className="muted">{chosen.file.name}</span> : null}
          </div>
        </section>
      )}
    </div>
  );
}

const TYPE_LABELS: Record<ColumnMapping['type'], string> = { text: 'Text', number: 'Number', boolean: 'Yes / no', date: 'Date' };

function target(column: ColumnMapping) {
  switch (column.target.kind) {
    case 'email':
      return <span className="badge badge-accent">Email</span>;
    case 'subscribed':
      return <span className="badge badge-accent">Subscribed</span>;
    case 'data':
      return (
        <span>
          Data field <code>{column.target.key}</code> <span className="muted">({TYPE_LABELS[column.type]})</span>
        </span>
      );
    case 'ignored':
      return (
        <span>
          <span className="badge">Not imported</span> <span className="muted">{column.target.reason}</span>
        </span>
      );
  }
}

function Preview({ chosen }: { chosen: ChosenFile }) {
  if (chosen.error) return <ErrorNotice error={new Error(chosen.error)} title="This file cannot be imported" />;
  if (chosen.mapping.error) return <ErrorNotice error={new Error(chosen.mapping.error)} title="This file cannot be imported" />;
  const problems = chosen.mapping.columns.flatMap((column) => column.problems).sort((a, b) => a.row - b.row);
  const rowCount = chosen.rows.length;
  return (
    <div className="import-preview">
      <h3 id="import-columns-heading">Columns</h3>
      <p className="muted">
        What each column becomes, with{' '}
        {rowCount === 0
          ? 'no data rows in the file'
          : `the values of the ${chosen.more ? 'first ' : ''}${formatNumber(rowCount)} row${rowCount === 1 ? '' : 's'}`}
        .
      </p>
      <div className="table-wrap" role="region" aria-labelledby="import-columns-heading" tabIndex={0}>
        <table className="table import-columns">
          <thead>
            <tr>
              <th scope="col">Column</th>
              <th scope="col">Maps to</th>
              <th scope="col">First values</th>
            </tr>
          </thead>
          <tbody>
            {chosen.mapping.columns.map((column) => (
              <tr key={column.header}>
                <th scope="row">{column.header}</th>
                <td>{target(column)}</td>
                <td className="import-samples">{column.samples.length > 0 ? column.samples.join(', ') : <span className="muted">(empty)</span>}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {problems.length > 0 ? (
        <div className="notice notice-warning">
          <p className="notice-title">Some previewed rows will be reported as errors; the others import.</p>
          <ul>
            {problems.map((problem) => (
              <li key={`${problem.row}-${problem.message}`}>
                Row {problem.row}: {problem.message}
              </li>
            ))}
          </ul>
        </div>
      ) : null}
    </div>
  );
}
