import { useCallback, useId, useState, type FormEvent } from 'react';
import { useInfiniteQuery, useMutation, useQueryClient } from '@tanstack/react-query';
import { Link, useSearchParams } from 'react-router';
import { unwrap } from '../api/client';
import { queryKeys } from '../api/queries';
import { useCurrentProject } from '../projects/currentProject';
import { ConfirmDialog } from '../components/ConfirmDialog';
import { ErrorNotice } from '../components/ErrorNotice';
import { Loading } from '../components/Loading';
import { PageTitle } from '../components/PageTitle';
import { formatDateTime, formatNumber } from '../components/format';
import { bulkJobTitle, JobProgress } from './JobProgress';
import { contactKeys, SORT_LABELS, type Contact, type SortOrder } from './contactsApi';
import { displayValue } from './dataFields';
import './contacts.css';
import { LoadMore } from '../components/LoadMore';

const PAGE_SIZE = 50;
/** POST /contacts/bulk-* takes at most this many ids. */
const MAX_BULK = 1000;

type BulkAction = 'subscribe' | 'unsubscribe' | 'delete';

function sortOf(value: string | null): SortOrder {
  return value !== null && value in SORT_LABELS ? (value as SortOrder) : 'createdAt-desc';
}

/** The first data fields of a contact, as a short line for the list. */
function dataSummary(data: Record<string, unknown>): string {
  const entries = Object.entries(data);
  const shown = entries.slice(0, 3).map(([key, value]) => `${key}: ${displayValue(value)}`);
  return entries.length > 3 ? `${shown.join(' · ')} · +${entries.length - 3}` : shown.join(' · ');
}

/**
 * /contacts: the project's contacts a page at a time (GET /contacts: search, subscribed, sort; the
 * filters live in the address), rows selected for the bulk jobs (subscribe, unsubscribe, delete)
 * whose progress shows live (?bulkJob= keeps it across reloads), and the ways in: a new contact, a CSV import.
 */
export function ContactsPage() {
  const { project, client } = useCurrentProject();
  const queryClient = useQueryClient();
  const [searchParams, setSearchParams] = useSearchParams();
  const search = searchParams.get('search')?.trim() || undefined;
  const subscribedParam = searchParams.get('subscribed');
  const subscribed = subscribedParam === 'true' || subscribedParam === 'false' ? subscribedParam : undefined;
  const sortOrder = sortOf(searchParams.get('sort'));
  const [sort, dir] = sortOrder.split('-') as ['createdAt' | 'email', 'asc' | 'desc'];
  const filterKey = JSON.stringify({ search, subscribed, sortOrder });
  const ids = { search: useId(), subscribed: useId(), sort: useId() };
  const base = `/projects/${project.id}/contacts`;

  const contacts = useInfiniteQuery({
    queryKey: [...contactKeys.all(project.id), 'list', { search, subscribed, sort, dir }],
    queryFn: ({ pageParam }) =>
      unwrap(
        client.GET('/contacts', {
          params: {
            query: {
              limit: PAGE_SIZE,
              sort,
              dir,
              ...(search ? { search } : {}),
              ...(subscribed ? { subscribed } : {}),
              ...(pageParam ? { cursor: pageParam } : {}),
            },
          },
        }),
      ),
    initialPageParam: undefined as string | undefined,
    getNextPageParam: (page) => page.cursor ?? undefined,
  });
  const items = contacts.data?.pages.flatMap((page) => page.data) ?? [];
  const firstPage = contacts.data?.pages[0];

  // The selection belongs to the filters it was made under: changing them starts a new one.
  const [selection, setSelection] = useState<{ filterKey: string; ids: ReadonlySet<string> }>({ filterKey, ids: new Set() });
  const selected = selection.filterKey === filterKey ? selection.ids : new Set<string>();
  const setSelected = (next: ReadonlySet<string>) => setSelection({ filterKey, ids: next });
  const toggle = (id: string) => {
    const next = new Set(selected);
    if (next.has(id)) next.delete(id);
    else next.add(id);
    setSelected(next);
  };
  const allShownSelected = items.length > 0 && items.every((contact) => selected.has(contact.id));

  // The running bulk job lives in the address (?bulkJob=), like the import's ?job=, so a reload keeps following it.
  const bulkJobId = searchParams.get('bulkJob') || null;
  const setBulkJobId = (id: string | null) =>
    setSearchParams(
      (current) => {
        const next = new URLSearchParams(current);
        if (id) next.set('bulkJob', id);
        else next.delete('bulkJob');
        return next;
      },
      { replace: true },
    );
  const [confirmingDelete, setConfirmingDelete] = useState(false);
  const bulk = useMutation({
    mutationFn: ({ action, contactIds }: { action: BulkAction; contactIds: string[] }) => {
      const body = { contactIds };
      if (action === 'subscribe') return unwrap(client.POST('/contacts/bulk-subscribe', { body }));
      if (action === 'unsubscribe') return unwrap(client.POST('/contacts/bulk-unsubscribe', { body }));
      return unwrap(client.POST('/contacts/bulk-delete', { body }));
    },
    onSuccess: (queued) => {
      setConfirmingDelete(false);
      setBulkJobId(queued.jobId);
      setSelected(new Set());
    },
  });
  const runBulk = (action: BulkAction) => bulk.mutate({ action, contactIds: [...selected] });
  const onBulkFinished = useCallback(
    () =>
      void Promise.all([
        queryClient.invalidateQueries({ queryKey: contactKeys.all(project.id) }),
        queryClient.invalidateQueries({ queryKey: queryKeys.setupState(project.id) }),
      ]),
    [queryClient, project.id],
  );

  function setFilter(name: string, value: string | undefined) {
    const next = new URLSearchParams(searchParams);
    if (value) next.set(name, value);
    else next.delete(name);
    setSearchParams(next, { replace: true });
  }
  function submitSearch(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const value = new FormData(event.currentTarget).get('search');
    setFilter('search', typeof value === 'string' ? value.trim() : undefined);
  }

  const filtered = Boolean(search || subscribed);
  const countText = firstPage
    ? filtered
      ? `${formatNumber(firstPage.total)}${firstPage.totalCapped ? '+' : ''} matching`
      : `${formatNumber(firstPage.total)} contact${firstPage.total === 1 ? '' : 's'}`
    : null;

  return (
    <div className="page">
      <PageTitle parts={['Contacts', project.name]} />
      <header className="page-header page-header-actions">
        <div>
          <h1>Contacts</h1>
          <p className="muted">The people your project mails: search them, open one, change many at once.</p>
        </div>
        <div className="header-actions">
          <Link className="button" to={`${base}/import`}>
            Import CSV
          </Link>
          <Link className="button button-primary" to={`${base}/new`}>
            New contact
          </Link>
        </div>
      </header>

      {bulkJobId ? (
        <div className="bulk-job">
          <JobProgress key={bulkJobId} jobId={bulkJobId} kind="bulk" title={bulkJobTitle} onFinished={onBulkFinished} />
          <button type="button" className="button button-quiet button-small bulk-job-dismiss" onClick={() => setBulkJobId(null)}>
            Dismiss
          </button>
        </div>
      ) : null}

      <section className="card" aria-labelledby="contacts-heading">
        <div className="card-header">
          <h2 id="contacts-heading" className="visually-hidden">
            Contacts
          </h2>
        </div>
        <div className="filters">
          <form role="search" className="filter-search contacts-search" onSubmit={submitSearch}>
            <label htmlFor={ids.search}>Search</label>
            <input id={ids.search} name="search" type="search" placeholder="Part of an email address" defaultValue={search ?? ''} key={search ?? ''} />
            <button type="submit" className="button">
              Search
            </button>
          </form>
          <div className="field field-inline">
            <label htmlFor={ids.subscribed}>Subscribed</label>
            <select id={ids.subscribed} value={subscribed ?? ''} onChange={(event) => setFilter('subscribed', event.target.value || undefined)}>
              <option value="">Any</option>
              <option value="true">Subscribed</option>
              <option value="false">Unsubscribed</option>
            </select>
          </div>
          <div className="field field-inline">
            <label htmlFor={ids.sort}>Sort</label>
            <select
              id={ids.sort}
              value={sortOrder}
              onChange={(event) => setFilter('sort', event.target.value === 'createdAt-desc' ? undefined : event.target.value)}
            >
              {Object.entries(SORT_LABELS).map(([value, label]) => (
                <option key={value} value={value}>
                  {label}
                </option>
              ))}
            </select>
          </div>
        </div>

        <div className="bulk-bar" role="group" aria-label="Selected contacts">
          <p className="bulk-count" role="status">
            {selected.size > 0
              ? `${formatNumber(selected.size)} selected`
              : countText
                ? `${countText}${items.length < (firstPage?.total ?? 0) ? `, ${formatNumber(items.length)} shown` : ''}`
                : ''}
          </p>
          {selected.size > 0 ? (
            <div className="bulk-actions">
              <button type="button" className="button button-small" disabled={bulk.isPending || selected.size > MAX_BULK} onClick={() => runBulk('subscribe')}>
                Subscribe
              </button>
              <button
                type="button"
                className="button button-small"
                disabled={bulk.isPending || selected.size > MAX_BULK}
                onClick={() => runBulk('unsubscribe')}
              >
                Unsubscribe
              </button>
              <button
                type="button"
                className="button button-small button-danger-quiet"
                disabled={bulk.isPending || selected.size > MAX_BULK}
                onClick={() => setConfirmingDelete(true)}
              >
                Delete
              </button>
              <button type="button" className="button button-quiet button-small" onClick={() => setSelected(new Set())}>
                Clear selection
              </button>
              {selected.size > MAX_BULK ? <span className="muted">At most {formatNumber(MAX_BULK)} at a time.</span> : null}
            </div>
          ) : null}
        </div>
        {bulk.error && !confirmingDelete ? <ErrorNotice error={bulk.error} /> : null}

        {contacts.isPending ? (
          <Loading label="Loading contacts…" />
        ) : contacts.isError ? (
          <ErrorNotice error={contacts.error} />
        ) : items.length === 0 ? (
          filtered ? (
            <p className="empty">No contact matches these filters.</p>
          ) : (
            <div className="empty empty-start">
              <p>No contacts yet. Add one by hand, import a CSV file, or let POST /v1/track and POST /contacts create them.</p>
              <p>
                <Link to={`${base}/new`}>Add a contact</Link> · <Link to={`${base}/import`}>Import a CSV file</Link>
              </p>
            </div>
          )
        ) : (
          <div className="table-wrap" role="region" aria-labelledby="contacts-heading" tabIndex={0}>
            <table className="table contacts-table">
              <thead>
                <tr>
                  <th scope="col" className="select-cell">
                    <input
                      type="checkbox"
                      aria-label="Select all shown"
                      checked={allShownSelected}
                      onChange={() => setSelected(allShownSelected ? new Set() : new Set(items.map((contact) => contact.id)))}
                    />
                  </th>
                  <th scope="col">Email</th>
                  <th scope="col">Subscribed</th>
                  <th scope="col" className="hide-narrow">
                    Data
                  </th>
                  <th scope="col" className="hide-narrow">
                    Created
                  </th>
                </tr>
              </thead>
              <tbody>
                {items.map((contact) => (
                  <ContactRow key={contact.id} contact={contact} base={base} selected={selected.has(contact.id)} onToggle={() => toggle(contact.id)} />
                ))}
              </tbody>
            </table>
          </div>
        )}
        <LoadMore query={contacts} />
      </section>

      <ConfirmDialog
        open={confirmingDelete}
        title={`Delete ${formatNumber(selected.size)} contact${selected.size === 1 ? '' : 's'}?`}
        confirmLabel="Delete contacts"
        busy={bulk.isPending}
        onConfirm={() => runBulk('delete')}
        onCancel={() => setConfirmingDelete(false)}
      >
        <p>
          Their data, events and email history, their segment memberships and their workflow runs are deleted with them. This cannot be undone; a later import
          or track call creates a new contact.
        </p>
        {bulk.error ? <ErrorNotice error={bulk.error} /> : null}
      </ConfirmDialog>
    </div>
  );
}

function ContactRow({ contact, base, selected, onToggle }: { contact: Contact; base: string; selected: boolean; onToggle: () => void }) {
  const summary = dataSummary(contact.data);
  return (
    <tr className={selected ? 'row-selected' : undefined}>
      <td className="select-cell">
        <input type="checkbox" aria-label={`Select ${contact.email}`} checked={selected} onChange={onToggle} />
      </td>
      <td className="contact-email">
        <Link to={`${base}/${contact.id}`}>
          <BreakableEmail email={contact.email} />
        </Link>
      </td>
      <td>
        <span className={contact.subscribed ? 'badge badge-success' : 'badge'}>{contact.subscribed ? 'Subscribed' : 'Unsubscribed'}</span>
      </td>
      <td className="truncate hide-narrow" title={summary || undefined}>
        {summary || <span className="muted">—</span>}
      </td>
      <td className="nowrap hide-narrow">{formatDateTime(contact.createdAt)}</td>
    </tr>
  );
}

/** An address that may wrap after its "@" (not in the middle of a word) on a narrow screen. */
function BreakableEmail({ email }: { email: string }) {
  const at = email.lastIndexOf('@');
  if (at < 0) return email;
  return (
    <>
      {email.slice(0, at + 1)}
      <wbr />
      {email.slice(at + 1)}
    </>
  );
}
