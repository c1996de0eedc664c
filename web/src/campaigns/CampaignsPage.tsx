import { useId, type FormEvent } from 'react';
import { useInfiniteQuery } from '@tanstack/react-query';
import { Link, useSearchParams } from 'react-router';
import { unwrap } from '../api/client';
import { useCurrentProject } from '../projects/currentProject';
import { ErrorNotice } from '../components/ErrorNotice';
import { Loading } from '../components/Loading';
import { PageTitle } from '../components/PageTitle';
import { formatDateTime, formatNumber } from '../components/format';
import { campaignKeys, STATUS_BADGES, STATUS_LABELS, type Campaign, type CampaignStatus } from './campaignData';
import './campaigns.css';
import { LoadMore } from '../components/LoadMore';

const PAGE_SIZE = 25;

function statusFrom(value: string | null): CampaignStatus | undefined {
  return value !== null && value in STATUS_LABELS ? (value as CampaignStatus) : undefined;
}

/** The date that matters for the campaign's state: when it was sent, when it will be, or when it was last changed. */
function dateOf(campaign: Campaign): { label: string; value: string } {
  if (campaign.status === 'SCHEDULED' && campaign.scheduledFor) return { label: 'Scheduled for', value: campaign.scheduledFor };
  if (campaign.status === 'CANCELLED' && campaign.cancelledAt) return { label: 'Cancelled', value: campaign.cancelledAt };
  if (campaign.sentAt) return { label: 'Sent', value: campaign.sentAt };
  return { label: 'Edited', value: campaign.updatedAt };
}

/** The project's campaigns (GET /campaigns), newest first, filtered by status and searched by name, subject or sender. */
export function CampaignsPage() {
  const { project, client } = useCurrentProject();
  const [searchParams, setSearchParams] = useSearchParams();
  const status = statusFrom(searchParams.get('status'));
  const search = searchParams.get('search')?.trim() || undefined;
  const searchId = useId();

  const campaigns = useInfiniteQuery({
    queryKey: [...campaignKeys.all(project.id), 'list', { status, search }],
    queryFn: ({ pageParam }) =>
      unwrap(
        client.GET('/campaigns', {
          params: { query: { page: pageParam, pageSize: PAGE_SIZE, ...(status ? { status } : {}), ...(search ? { search } : {}) } },
        }),
      ),
    initialPageParam: 1,
    getNextPageParam: (last) => (last.page < last.totalPages ? last.page + 1 : undefined),
    // A list with a campaign on its way follows it without a reload.
    refetchInterval: (query) => (query.state.data?.pages.some((page) => page.data.some((c) => c.status === 'SENDING')) ? 5_000 : false),
  });
  const items = campaigns.data?.pages.flatMap((page) => page.data) ?? [];
  const total = campaigns.data?.pages[0]?.total;

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

  return (
    <div className="page">
      <PageTitle parts={['Campaigns', project.name]} />
      <header className="page-header page-header-actions">
        <div>
          <h1>Campaigns</h1>
          <p className="muted">One email to many contacts: compose it, choose its audience, send it now or at a time.</p>
        </div>
        <Link className="button button-primary" to="new">
          New campaign
        </Link>
      </header>
      <section className="card" aria-labelledby="campaigns-heading">
        <h2 id="campaigns-heading" className="visually-hidden">
          Campaigns
        </h2>
        <div className="filters campaign-filters">
          <div className="segmented" role="group" aria-label="Status">
            <button type="button" className="segmented-option" aria-pressed={!status} onClick={() => setFilter('status', undefined)}>
              All
            </button>
            {(Object.keys(STATUS_LABELS) as CampaignStatus[]).map((value) => (
              <button key={value} type="button" className="segmented-option" aria-pressed={status === value} onClick={() => setFilter('status', value)}>
                {STATUS_LABELS[value]}
              </button>
            ))}
          </div>
          <form role="search" className="filter-search" onSubmit={submitSearch}>
            <label htmlFor={searchId}>Search</label>
            <input id={searchId} name="search" type="search" placeholder="Name, subject or sender" defaultValue={search ?? ''} key={search ?? ''} />
            <button type="submit" className="button">
              Search
            </button>
          </form>
        </div>
        {campaigns.isPending ? (
          <Loading label="Loading campaigns…" />
        ) : campaigns.isError ? (
          <ErrorNotice error={campaigns.error} title="The campaigns could not be loaded" />
        ) : items.length === 0 ? (
          status || search ? (
            <p className="empty">No campaign matches these filters.</p>
          ) : (
            <div className="empty campaign-empty">
              <p>No campaigns yet. Write one, choose who receives it, and send it now or schedule it.</p>
              <Link className="button button-primary" to="new">
                New campaign
              </Link>
            </div>
          )
        ) : (
          <div className="table-wrap" role="region" aria-labelledby="campaigns-heading" tabIndex={0}>
            <table className="table campaign-table">
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Status</th>
                  <th scope="col" className="numeric">
                    Sent
                  </th>
                  <th scope="col">Date</th>
                </tr>
              </thead>
              <tbody>
                {items.map((campaign) => {
                  const date = dateOf(campaign);
                  return (
                    <tr key={campaign.id}>
                      <td className="campaign-name-cell">
                        <Link to={campaign.id}>{campaign.name}</Link>
                        <span className="muted campaign-subject">{campaign.subject}</span>
                      </td>
                      <td>
                        <span className={STATUS_BADGES[campaign.status]}>{STATUS_LABELS[campaign.status]}</span>
                      </td>
                      <td className="numeric nowrap">
                        {campaign.status === 'DRAFT' || campaign.status === 'SCHEDULED' || (campaign.status === 'CANCELLED' && campaign.totalRecipients === 0)
                          ? '—'
                          : `${formatNumber(campaign.sentCount)} of ${formatNumber(campaign.totalRecipients)}`}
                      </td>
                      <td className="nowrap">
                        <span className="muted">{date.label}</span> {formatDateTime(date.value)}
                      </td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </div>
        )}
        <LoadMore query={campaigns} />
        {total !== undefined && items.length > 0 ? (
          <p className="muted campaign-count">
            {formatNumber(items.length)} of {formatNumber(total)} shown
          </p>
        ) : null}
      </section>
    </div>
  );
}
