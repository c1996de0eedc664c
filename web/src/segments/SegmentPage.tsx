import { useId, useState, type FormEvent } from 'react';
import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useNavigate, useParams } from 'react-router';
import { unwrap } from '../api/client';
import { useCurrentProject } from '../projects/currentProject';
import { ConfirmDialog } from '../components/ConfirmDialog';
import { ErrorNotice } from '../components/ErrorNotice';
import { Loading } from '../components/Loading';
import { PageTitle } from '../components/PageTitle';
import { formatDateTime, formatNumber } from '../components/format';
import { asConditionTree, conditionText } from './conditionText';
import { segmentKeys, segmentNames, segmentQuery, segmentsQuery, type Segment } from './segmentsApi';
import './segments.css';

const PAGE_SIZE = 25;

/** One segment: its condition as text, its member count, its members page by page; a static one's members added and removed; compute; delete. */
export function SegmentPage() {
  const { segmentId = '' } = useParams();
  const { project, client } = useCurrentProject();
  const segment = useQuery(segmentQuery(project.id, client, segmentId));
  if (segment.isPending) {
    return (
      <div className="page">
        <Loading />
      </div>
    );
  }
  if (segment.isError) {
    return (
      <div className="page">
        <PageTitle parts={['Segment', project.name]} />
        <p className="seg-breadcrumb">
          <Link to=".." relative="path">
            Segments
          </Link>
        </p>
        <h1>Segment</h1>
        <ErrorNotice error={segment.error} />
      </div>
    );
  }
  return <SegmentDetail segment={segment.data} />;
}

function SegmentDetail({ segment }: { segment: Segment }) {
  const { project, client } = useCurrentProject();
  const queryClient = useQueryClient();
  const segments = useQuery(segmentsQuery(project.id, client));
  const refresh = useMutation({
    mutationFn: () => unwrap(client.POST('/segments/{id}/refresh', { params: { path: { id: segment.id } } })),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: segmentKeys.all(project.id) }),
  });
  const typeLabel = segment.type === 'DYNAMIC' ? 'Dynamic' : 'Static';
  return (
    <div className="page">
      <PageTitle parts={[segment.name, 'Segments', project.name]} />
      <p className="seg-breadcrumb">
        <Link to=".." relative="path">
          Segments
        </Link>
      </p>
      <header className="page-header">
        <h1>{segment.name}</h1>
        <p className="seg-badges">
          <span className="badge">{typeLabel}</span>
          {segment.trackMembership ? <span className="badge badge-success">Tracked membership</span> : null}
        </p>
        {segment.description ? <p className="muted">{segment.description}</p> : null}
      </header>

      <section className="card" aria-labelledby="segment-summary-heading">
        <h2 id="segment-summary-heading">Summary</h2>
        <dl className="stats">
          <div>
            <dt>Members</dt>
            <dd>{formatNumber(segment.memberCount)}</dd>
          </div>
          <div>
            <dt>Type</dt>
            <dd className="seg-stat-text">{typeLabel}</dd>
          </div>
          <div>
            <dt>Updated</dt>
            <dd className="seg-stat-text">{formatDateTime(segment.updatedAt)}</dd>
          </div>
        </dl>
        {segment.trackMembership ? (
          <p className="muted seg-events">
            Entry and exit are recorded as the events <code>segment.{segment.slug}.entry</code> and <code>segment.{segment.slug}.exit</code>.
          </p>
        ) : null}
        {refresh.error ? <ErrorNotice error={refresh.error} /> : null}
        <div className="form-actions card-actions">
          <button type="button" className="button" onClick={() => refresh.mutate()} disabled={refresh.isPending} aria-busy={refresh.isPending || undefined}>
            Refresh count
          </button>
        </div>
      </section>

      {segment.type === 'DYNAMIC' && segment.condition ? (
        <section className="card" aria-labelledby="segment-condition-heading">
          <h2 id="segment-condition-heading">Condition</h2>
          <p className="seg-condition">{conditionText(asConditionTree(segment.condition), segmentNames(segments.data))}</p>
        </section>
      ) : null}

      {segment.type === 'DYNAMIC' && segment.trackMembership ? <ComputeCard segment={segment} /> : null}
      {segment.type === 'STATIC' ? <AddMembersCard segment={segment} /> : null}
      <MembersCard segment={segment} />
      <DeleteSegment segment={segment} />
    </div>
  );
}

/**
 * A tracked segment's members brought up to date now (POST /segments/:id/compute, which answers
 * when done): a live status while it runs, then what changed.
 */
function ComputeCard({ segment }: { segment: Segment }) {
  const { project, client } = useCurrentProject();
  const queryClient = useQueryClient();
  const compute = useMutation({
    mutationFn: () => unwrap(client.POST('/segments/{id}/compute', { params: { path: { id: segment.id } } })),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: segmentKeys.all(project.id) }),
  });
  return (
    <section className="card" aria-labelledby="segment-compute-heading">
      <h2 id="segment-compute-heading">Tracked membership</h2>
      <p className="muted">
        Members are kept current as contacts change, and recomputed on a schedule. Compute brings them up to date now, recording entry and exit events.
      </p>
      <p role="status" className="seg-status">
        {compute.isPending
          ? 'Computing the members…'
          : compute.data
            ? `Computed: ${formatNumber(compute.data.added)} added, ${formatNumber(compute.data.removed)} removed, ${formatNumber(compute.data.total)} members now.`
            : ''}
      </p>
      {compute.error ? <ErrorNotice error={compute.error} /> : null}
      <div className="form-actions">
        <button
          type="button"
          className="button button-primary"
          onClick={() => compute.mutate()}
          disabled={compute.isPending}
          aria-busy={compute.isPending || undefined}
        >
          Compute
        </button>
      </div>
    </section>
  );
}

/** Addresses from a text field: split on commas, semicolons, spaces and line breaks. */
function addressesIn(text: string): string[] {
  return [...new Set(text.split(/[\s,;]+/).filter(Boolean))];
}

function AddMembersCard({ segment }: { segment: Segment }) {
  const { project, client } = useCurrentProject();
  const queryClient = useQueryClient();
  const ids = { emails: useId(), hint: useId(), create: useId() };
  const [text, setText] = useState('');
  const [createMissing, setCreateMissing] = useState(false);
  const add = useMutation({
    mutationFn: (emails: string[]) => unwrap(client.POST('/segments/{id}/members', { params: { path: { id: segment.id } }, body: { emails, createMissing } })),
    onSuccess: async () => {
      setText('');
      await queryClient.invalidateQueries({ queryKey: segmentKeys.all(project.id) });
    },
  });
  function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const emails = addressesIn(text);
    if (emails.length) add.mutate(emails);
  }
  return (
    <section className="card" aria-labelledby="add-members-heading">
      <h2 id="add-members-heading">Add members</h2>
      <form className="form" onSubmit={submit} noValidate>
        <div className="field">
          <label htmlFor={ids.emails}>Emails</label>
          <textarea
            id={ids.emails}
            className="seg-textarea"
            rows={3}
            value={text}
            onChange={(event) => setText(event.target.value)}
            aria-describedby={ids.hint}
            placeholder="ada@example.com, grace@example.com"
          />
          <p id={ids.hint} className="field-hint">
            One or more addresses (up to 500), separated by commas or line breaks.
          </p>
        </div>
        <div className="seg-checkbox">
          <input id={ids.create} type="checkbox" checked={createMissing} onChange={(event) => setCreateMissing(event.target.checked)} />
          <label htmlFor={ids.create}>Create contacts for addresses that are not contacts yet</label>
        </div>
        {add.error ? <ErrorNotice error={add.error} /> : null}
        <p role="status" className="seg-status">
          {add.data
            ? `Added ${formatNumber(add.data.added)}${add.data.created ? `, ${formatNumber(add.data.created)} new contacts` : ''}.` +
              (add.data.notFound.length ? ` Not contacts (not added): ${add.data.notFound.join(', ')}.` : '')
            : ''}
        </p>
        <div className="form-actions">
          <button type="submit" className="button button-primary" disabled={add.isPending || !text.trim()} aria-busy={add.isPending || undefined}>
            Add members
          </button>
        </div>
      </form>
    </section>
  );
}

function MembersCard({ segment }: { segment: Segment }) {
  const { project, client } = useCurrentProject();
  const queryClient = useQueryClient();
  const [page, setPage] = useState(1);
  const members = useQuery({
    queryKey: [...segmentKeys.members(project.id, segment.id), page],
    queryFn: () => unwrap(client.GET('/segments/{id}/contacts', { params: { path: { id: segment.id }, query: { page, pageSize: PAGE_SIZE } } })),
    placeholderData: keepPreviousData,
  });
  const remove = useMutation({
    mutationFn: (email: string) => unwrap(client.DELETE('/segments/{id}/members', { params: { path: { id: segment.id } }, body: { emails: [email] } })),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: segmentKeys.all(project.id) }),
  });
  const totalPages = members.data?.totalPages ?? 0;
  return (
    <section className="card" aria-labelledby="members-heading">
      <div className="card-header">
        <h2 id="members-heading">Members</h2>
        {members.data ? <p className="muted">{formatNumber(members.data.total)} now</p> : null}
      </div>
      {remove.error ? <ErrorNotice error={remove.error} /> : null}
      {members.isPending ? (
        <Loading />
      ) : members.isError ? (
        <ErrorNotice error={members.error} />
      ) : members.data.data.length === 0 ? (
        <p className="empty">{segment.type === 'STATIC' ? 'No members yet. Add contacts by their email above.' : 'No contact matches the condition now.'}</p>
      ) : (
        <div className="table-wrap seg-table-wrap" role="region" aria-labelledby="members-heading" tabIndex={0}>
          <table className="table">
            <thead>
              <tr>
                <th scope="col">Email</th>
                <th scope="col">Subscribed</th>
                <th scope="col">Created</th>
                {segment.type === 'STATIC' ? (
                  <th scope="col">
                    <span className="visually-hidden">Actions</span>
                  </th>
                ) : null}
              </tr>
            </thead>
            <tbody>
              {members.data.data.map((contact) => (
                <tr key={contact.id}>
                  <td>
                    <Link to={`../../contacts/${contact.id}`} relative="path">
                      {contact.email}
                    </Link>
                  </td>
                  <td>{contact.subscribed ? 'Yes' : 'No'}</td>
                  <td className="nowrap">{formatDateTime(contact.createdAt)}</td>
                  {segment.type === 'STATIC' ? (
                    <td className="cell-actions">
                      <button
                        type="button"
                        className="button button-small button-quiet"
                        aria-label={`Remove ${contact.email}`}
                        onClick={() => remove.mutate(contact.email)}
                        disabled={remove.isPending}
                      >
                        Remove
                      </button>
                    </td>
                  ) : null}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {totalPages > 1 ? (
        <nav className="seg-pager" aria-label="Members pages">
          <button type="button" className="button button-small" onClick={() => setPage((p) => p - 1)} disabled={page <= 1}>
            Previous page
          </button>
          <span className="muted">
            Page {page} of {totalPages}
          </span>
          <button type="button" className="button button-small" onClick={() => setPage((p) => p + 1)} disabled={page >= totalPages}>
            Next page
          </button>
        </nav>
      ) : null}
    </section>
  );
}

function DeleteSegment({ segment }: { segment: Segment }) {
  const { project, client } = useCurrentProject();
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const [confirming, setConfirming] = useState(false);
  const remove = useMutation({
    mutationFn: () => unwrap(client.DELETE('/segments/{id}', { params: { path: { id: segment.id } } })),
    onSuccess: async () => {
      setConfirming(false);
      queryClient.removeQueries({ queryKey: segmentKeys.one(project.id, segment.id) });
      await queryClient.invalidateQueries({ queryKey: segmentKeys.list(project.id) });
      await navigate('..', { relative: 'path' });
    },
    onError: () => setConfirming(false),
  });
  return (
    <section className="card" aria-labelledby="delete-segment-heading">
      <h2 id="delete-segment-heading">Delete this segment</h2>
      <p className="muted">Its contacts stay; campaigns and segments that use it must stop using it first.</p>
      {remove.error ? <ErrorNotice error={remove.error} /> : null}
      <button type="button" className="button button-danger" onClick={() => setConfirming(true)}>
        Delete segment
      </button>
      <ConfirmDialog
        open={confirming}
        title={`Delete ${segment.name}?`}
        confirmLabel="Delete segment"
        busy={remove.isPending}
        onConfirm={() => remove.mutate()}
        onCancel={() => setConfirming(false)}
      >
        <p>The segment is deleted; its contacts are not. This cannot be undone.</p>
      </ConfirmDialog>
    </section>
  );
}
