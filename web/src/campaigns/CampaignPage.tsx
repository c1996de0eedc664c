import { useId, useState, type FormEvent } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useNavigate, useParams } from 'react-router';
import { unwrap } from '../api/client';
import { segmentsQuery } from '../segments/segmentsApi';
import { queryKeys } from '../api/queries';
import { useCurrentProject } from '../projects/currentProject';
import { ConfirmDialog } from '../components/ConfirmDialog';
import { ErrorNotice } from '../components/ErrorNotice';
import { Loading } from '../components/Loading';
import { PageTitle } from '../components/PageTitle';
import { formatDateTime, formatNumber, formatPercent } from '../components/format';
import { BodyPreview } from './BodyPreview';
import { RecipientCount } from './AudienceFields';
import {
  audienceOf,
  AUDIENCE_LABELS,
  campaignKeys,
  campaignQuery,
  contactsPhrase,
  readableCondition,
  STATUS_BADGES,
  STATUS_LABELS,
  TYPE_HINTS,
  TYPE_LABELS,
  useRecipientCount,
  type Campaign,
} from './campaignData';
import './campaigns.css';

/** /campaigns/:campaignId: a draft's review (send now or schedule), a scheduled or sending campaign with Cancel, a sent one's results. */
export function CampaignPage() {
  const { project, client } = useCurrentProject();
  const { campaignId = '' } = useParams();
  const campaign = useQuery(campaignQuery(client, project.id, campaignId));
  const campaignsPath = `/projects/${project.id}/campaigns`;

  if (campaign.isPending) return <Loading label="Loading the campaign…" />;
  if (campaign.isError) {
    return (
      <div className="page">
        <PageTitle parts={['Campaign', project.name]} />
        <header className="page-header">
          <p className="breadcrumb">
            <Link to={campaignsPath}>Campaigns</Link>
          </p>
          <h1>Campaign</h1>
        </header>
        <ErrorNotice error={campaign.error} title="The campaign could not be loaded" />
      </div>
    );
  }
  const c = campaign.data;
  return (
    <div className="page">
      <PageTitle parts={[c.name, 'Campaigns', project.name]} />
      <header className="page-header">
        <p className="breadcrumb">
          <Link to={campaignsPath}>Campaigns</Link>
        </p>
        <div className="campaign-title">
          <h1>{c.name}</h1>
          <span className={STATUS_BADGES[c.status]}>{STATUS_LABELS[c.status]}</span>
        </div>
        <p className="muted campaign-subject-line">{c.subject}</p>
      </header>
      {c.status === 'DRAFT' ? <DraftReview campaign={c} /> : null}
      {c.status === 'SCHEDULED' ? <Scheduled campaign={c} /> : null}
      {c.status === 'SENDING' ? <Sending campaign={c} /> : null}
      {c.status === 'SENT' || c.status === 'CANCELLED' ? <Results campaign={c} /> : null}
      <Details campaign={c} />
      <section className="card" aria-labelledby="content-heading">
        <h2 id="content-heading">Content</h2>
        <BodyPreview subject={c.subject} body={c.body} type={c.type} />
      </section>
      <OtherActions campaign={c} />
    </div>
  );
}

/** Who it is from and to, in words. */
function Details({ campaign }: { campaign: Campaign }) {
  const { project, client } = useCurrentProject();
  const segment = useQuery({
    queryKey: [...queryKeys.project(project.id), 'segments', 'one', campaign.segmentId],
    queryFn: () => unwrap(client.GET('/segments/{id}', { params: { path: { id: campaign.segmentId! } } })),
    enabled: campaign.audienceType === 'SEGMENT' && campaign.segmentId !== null,
  });
  const segments = useQuery({
    ...segmentsQuery(project.id, client),
    enabled: campaign.audienceType === 'FILTERED',
  });
  const segmentNames = new Map((segments.data ?? []).map((s) => [s.id, s.name]));
  let audience: string = AUDIENCE_LABELS[campaign.audienceType];
  if (campaign.audienceType === 'SEGMENT') {
    audience = campaign.segmentId === null ? 'A segment that was deleted' : `Segment: ${segment.data?.name ?? '…'}`;
  }
  return (
    <section className="card" aria-labelledby="details-heading">
      <h2 id="details-heading">Details</h2>
      <dl className="details">
        <div>
          <dt>From</dt>
          <dd>{campaign.fromName ? `${campaign.fromName} <${campaign.from}>` : campaign.from}</dd>
        </div>
        <div>
          <dt>Reply to</dt>
          <dd>{campaign.replyTo ?? <span className="muted">The From address</span>}</dd>
        </div>
        <div>
          <dt>Type</dt>
          <dd>
            {TYPE_LABELS[campaign.type]}
            <span className="details-note">{TYPE_HINTS[campaign.type]}</span>
          </dd>
        </div>
        <div>
          <dt>Audience</dt>
          <dd>{audience}</dd>
        </div>
        {campaign.audienceType === 'FILTERED' && campaign.audienceCondition ? (
          <div className="details-wide">
            <dt>Filter</dt>
            <dd>
              <p className="condition-text">{readableCondition(campaign.audienceCondition, segmentNames) ?? 'A condition this page cannot put in words'}</p>
              <details className="condition-json">
                <summary>The condition as JSON</summary>
                <pre className="condition-text">{JSON.stringify(campaign.audienceCondition, null, 2)}</pre>
              </details>
            </dd>
          </div>
        ) : null}
        <div>
          <dt>Created</dt>
          <dd>{formatDateTime(campaign.createdAt)}</dd>
        </div>
        <div>
          <dt>Last changed</dt>
          <dd>{formatDateTime(campaign.updatedAt)}</dd>
        </div>
      </dl>
    </section>
  );
}

function useCampaignRefresh(campaign: Campaign) {
  const { project } = useCurrentProject();
  const queryClient = useQueryClient();
  return async () => {
    await queryClient.invalidateQueries({ queryKey: campaignKeys.one(project.id, campaign.id) });
    await queryClient.invalidateQueries({ queryKey: campaignKeys.all(project.id), refetchType: 'none' });
  };
}

/** The value of a datetime-local input for a moment (local time, to the minute). */
function localInputValue(date: Date): string {
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}T${pad(date.getHours())}:${pad(date.getMinutes())}`;
}

/** The review step of a draft: who will receive it, then Send now or Schedule, each confirmed with the number of contacts. */
function DraftReview({ campaign }: { campaign: Campaign }) {
  const { project, client } = useCurrentProject();
  const refresh = useCampaignRefresh(campaign);
  const scheduleId = useId();
  const count = useRecipientCount(client, project.id, audienceOf(campaign));
  const [confirming, setConfirming] = useState<null | { at: Date | null }>(null);
  const [sendAt, setSendAt] = useState(() => localInputValue(new Date(Date.now() + 60 * 60 * 1000)));
  const [scheduleError, setScheduleError] = useState<string | null>(null);
  const send = useMutation({
    mutationFn: (at: Date | null) =>
      unwrap(client.POST('/campaigns/{id}/send', { params: { path: { id: campaign.id } }, body: at ? { scheduledFor: at.toISOString() } : {} })),
    onSuccess: async () => {
      setConfirming(null);
      await refresh();
    },
  });
  const recipients = count.data;
  const nobody = recipients === 0;

  function schedule(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const at = new Date(sendAt);
    if (!sendAt || Number.isNaN(at.getTime())) return setScheduleError('Choose a date and time.');
    if (at.getTime() <= Date.now()) return setScheduleError('Choose a time in the future, or send it now.');
    setScheduleError(null);
    send.reset();
    setConfirming({ at });
  }

  return (
    <section className="card review" aria-labelledby="review-heading">
      <h2 id="review-heading">Review and send</h2>
      <p>This campaign is a draft. Check its details and content below, then send it now or choose a time.</p>
      <RecipientCount audience={audienceOf(campaign)} count={recipients} pending={count.isFetching} error={count.error} />
      {nobody ? <p className="notice notice-warning">No contact is in this audience yet: nobody would receive it.</p> : null}
      <div className="review-actions">
        <div className="review-now">
          <button
            type="button"
            className="button button-primary"
            disabled={recipients === undefined || nobody || send.isPending}
            onClick={() => {
              send.reset();
              setConfirming({ at: null });
            }}
          >
            Send now
          </button>
          <Link className="button" to="edit">
            Edit
          </Link>
        </div>
        <form className="review-schedule" noValidate onSubmit={schedule}>
          <div className="field">
            <label htmlFor={scheduleId}>Send at</label>
            <input
              id={scheduleId}
              type="datetime-local"
              value={sendAt}
              min={localInputValue(new Date())}
              onChange={(event) => setSendAt(event.target.value)}
              aria-invalid={scheduleError ? true : undefined}
              aria-describedby={scheduleError ? `${scheduleId}-error` : undefined}
            />
            {scheduleError ? (
              <p id={`${scheduleId}-error`} className="field-error">
                {scheduleError}
              </p>
            ) : null}
          </div>
          <button type="submit" className="button" disabled={recipients === undefined || nobody || send.isPending}>
            Schedule
          </button>
        </form>
      </div>
      {send.error && !confirming ? <ErrorNotice error={send.error} title="The campaign was not sent" /> : null}
      <ConfirmDialog
        open={confirming !== null}
        title={confirming?.at ? 'Schedule this campaign?' : 'Send this campaign now?'}
        confirmLabel={confirming?.at ? 'Schedule' : 'Send now'}
        busy={send.isPending}
        onCancel={() => setConfirming(null)}
        onConfirm={() => confirming && send.mutate(confirming.at)}
      >
        <p>
          {confirming?.at
            ? `“${campaign.name}” will be sent on ${formatDateTime(confirming.at)} to the contacts in its audience at that time (${contactsPhrase(recipients ?? 0)} now).`
            : `“${campaign.name}” will be sent now to ${contactsPhrase(recipients ?? 0)}. Mail that has left cannot be called back.`}
        </p>
        {send.error ? <ErrorNotice error={send.error} /> : null}
      </ConfirmDialog>
    </section>
  );
}

/** Cancel a SCHEDULED or SENDING campaign (through the API, which cancels its Temporal workflow), confirmed first. */
function CancelCampaign({ campaign, consequence }: { campaign: Campaign; consequence: string }) {
  const { client } = useCurrentProject();
  const refresh = useCampaignRefresh(campaign);
  const [confirming, setConfirming] = useState(false);
  const cancel = useMutation({
    mutationFn: () => unwrap(client.POST('/campaigns/{id}/cancel', { params: { path: { id: campaign.id } } })),
    onSuccess: async () => {
      setConfirming(false);
      await refresh();
    },
  });
  return (
    <>
      <button
        type="button"
        className="button button-danger"
        onClick={() => {
          cancel.reset();
          setConfirming(true);
        }}
      >
        Cancel campaign
      </button>
      {cancel.error && !confirming ? <ErrorNotice error={cancel.error} title="The campaign was not cancelled" /> : null}
      <ConfirmDialog
        open={confirming}
        title="Cancel this campaign?"
        confirmLabel="Cancel campaign"
        busy={cancel.isPending}
        onCancel={() => setConfirming(false)}
        onConfirm={() => cancel.mutate()}
      >
        <p>{consequence}</p>
        {cancel.error ? <ErrorNotice error={cancel.error} /> : null}
      </ConfirmDialog>
    </>
  );
}

function Scheduled({ campaign }: { campaign: Campaign }) {
  const { project, client } = useCurrentProject();
  const count = useRecipientCount(client, project.id, audienceOf(campaign));
  return (
    <section className="card" aria-labelledby="schedule-heading">
      <h2 id="schedule-heading">Scheduled</h2>
      <p className="campaign-when">
        Sends on <strong>{campaign.scheduledFor ? formatDateTime(campaign.scheduledFor) : 'its scheduled time'}</strong>.
      </p>
      <RecipientCount audience={audienceOf(campaign)} count={count.data} pending={count.isFetching} error={count.error} />
      <p className="muted">The audience is fixed when sending starts: contacts who join it before then receive it too.</p>
      <div className="form-actions">
        <Link className="button" to="edit">
          Edit
        </Link>
        <CancelCampaign
          campaign={campaign}
          consequence={`“${campaign.name}” will not be sent: it becomes cancelled and stays in the list. To send it later, duplicate it and schedule the copy.`}
        />
      </div>
    </section>
  );
}

function Sending({ campaign }: { campaign: Campaign }) {
  const total = campaign.totalRecipients;
  const fixed = total > 0 || campaign.sentCount > 0;
  return (
    <section className="card" aria-labelledby="progress-heading">
      <h2 id="progress-heading">Sending</h2>
      <progress
        className="campaign-progress"
        aria-labelledby="progress-heading"
        max={Math.max(total, 1)}
        value={fixed ? campaign.sentCount : undefined}
        aria-valuetext={fixed ? `${formatNumber(campaign.sentCount)} of ${formatNumber(total)} sent` : 'Preparing the audience'}
      />
      <p role="status" className="progress-text">
        {fixed ? `${formatNumber(campaign.sentCount)} of ${formatNumber(total)} sent` : 'Preparing the audience…'}
      </p>
      <p className="muted">This page updates by itself while the campaign is sent.</p>
      <div className="form-actions">
        <CancelCampaign
          campaign={campaign}
          consequence={`Sending stops: the ${contactsPhrase(Math.max(total - campaign.sentCount, 0))} not reached yet will not receive “${campaign.name}”. Mail already sent stays sent.`}
        />
      </div>
    </section>
  );
}

/** A sent (or cancelled) campaign's numbers: GET /campaigns/:id/stats, following delivery feedback as it comes. */
function Results({ campaign }: { campaign: Campaign }) {
  const { project, client } = useCurrentProject();
  const stats = useQuery({
    queryKey: campaignKeys.stats(project.id, campaign.id),
    queryFn: async () => (await unwrap(client.GET('/campaigns/{id}/stats', { params: { path: { id: campaign.id } } }))).data,
    refetchInterval: 30_000,
  });
  return (
    <section className="card" aria-labelledby="results-heading">
      <div className="card-header">
        <h2 id="results-heading">Results</h2>
        {campaign.sentAt ? <p className="muted">Sent {formatDateTime(campaign.sentAt)}</p> : null}
      </div>
      {campaign.status === 'CANCELLED' ? (
        <p className="notice">
          {campaign.stopReason
            ? campaign.stopReason.message
            : `Cancelled${campaign.cancelledAt ? ` on ${formatDateTime(campaign.cancelledAt)}` : ''}: ${formatNumber(campaign.sentCount)} of ${formatNumber(campaign.totalRecipients)} recipients had been sent to.`}
        </p>
      ) : null}
      {stats.isPending ? (
        <Loading label="Loading the results…" />
      ) : stats.isError ? (
        <ErrorNotice error={stats.error} title="The results could not be loaded" />
      ) : (
        <dl className="stats campaign-stats">
          <div>
            <dt>Sent</dt>
            <dd>
              {formatNumber(stats.data.sentCount)}
              <span className="stat-rate">of {formatNumber(stats.data.totalRecipients)} recipients</span>
            </dd>
          </div>
          <div>
            <dt>Delivered</dt>
            <dd>
              {formatNumber(stats.data.deliveredCount)}
              <span className="stat-rate">{formatPercent(stats.data.deliveryRate)} of sent</span>
            </dd>
          </div>
          <div>
            <dt>Opened</dt>
            <dd>
              {formatNumber(stats.data.openedCount)}
              <span className="stat-rate">{formatPercent(stats.data.openRate)} of sent</span>
            </dd>
          </div>
          <div>
            <dt>Clicked</dt>
            <dd>
              {formatNumber(stats.data.clickedCount)}
              <span className="stat-rate">{formatPercent(stats.data.clickRate)} of sent</span>
            </dd>
          </div>
          <div>
            <dt>Bounced</dt>
            <dd>
              {formatNumber(stats.data.bouncedCount)}
              <span className="stat-rate">{formatPercent(stats.data.bounceRate)} of sent</span>
            </dd>
          </div>
        </dl>
      )}
      {stats.data ? (
        <p className="muted campaign-stats-more">
          Complained: {formatNumber(stats.data.complainedCount)} · Unsubscribed after it: {formatNumber(stats.data.unsubscribedCount)}. Rates are of the emails
          sent; opens and clicks come from the tracking pixel and links.
        </p>
      ) : null}
    </section>
  );
}

/** Send a test, duplicate, delete: what any campaign's page offers besides its state's own actions. */
function OtherActions({ campaign }: { campaign: Campaign }) {
  const { project, client } = useCurrentProject();
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const testId = useId();
  const [testTo, setTestTo] = useState('');
  const [confirmingDelete, setConfirmingDelete] = useState(false);
  const test = useMutation({
    mutationFn: (email: string) => unwrap(client.POST('/campaigns/{id}/test', { params: { path: { id: campaign.id } }, body: { email } })),
  });
  const duplicate = useMutation({
    mutationFn: () => unwrap(client.POST('/campaigns/{id}/duplicate', { params: { path: { id: campaign.id } } })),
    onSuccess: async (copy) => {
      await queryClient.invalidateQueries({ queryKey: campaignKeys.all(project.id) });
      void navigate(`/projects/${project.id}/campaigns/${copy.id}/edit`);
    },
  });
  const remove = useMutation({
    mutationFn: () => unwrap(client.DELETE('/campaigns/{id}', { params: { path: { id: campaign.id } } })),
    onSuccess: async () => {
      setConfirmingDelete(false);
      queryClient.removeQueries({ queryKey: campaignKeys.one(project.id, campaign.id) });
      await queryClient.invalidateQueries({ queryKey: campaignKeys.all(project.id) });
      void navigate(`/projects/${project.id}/campaigns`);
    },
  });
  const active = campaign.status === 'SCHEDULED' || campaign.status === 'SENDING';
  return (
    <section className="card" aria-labelledby="more-heading">
      <h2 id="more-heading">More</h2>
      <form
        className="form-row test-form"
        noValidate
        onSubmit={(event) => {
          event.preventDefault();
          test.mutate(testTo.trim());
        }}
      >
        <div className="field">
          <label htmlFor={testId}>Test recipient</label>
          <input id={testId} type="email" autoComplete="email" value={testTo} onChange={(event) => setTestTo(event.target.value)} />
        </div>
        <button type="submit" className="button" disabled={test.isPending} aria-busy={test.isPending || undefined}>
          Send test
        </button>
      </form>
      <p role="status" className="test-status">
        {test.data ? test.data.message : ''}
      </p>
      {test.error ? <ErrorNotice error={test.error} title="The test was not sent" /> : null}
      <div className="form-actions more-actions">
        <button type="button" className="button" onClick={() => duplicate.mutate()} disabled={duplicate.isPending} aria-busy={duplicate.isPending || undefined}>
          Duplicate
        </button>
        {!active ? (
          <button
            type="button"
            className="button button-quiet danger-text"
            onClick={() => {
              remove.reset();
              setConfirmingDelete(true);
            }}
          >
            Delete campaign
          </button>
        ) : null}
      </div>
      {duplicate.error ? <ErrorNotice error={duplicate.error} title="The campaign was not duplicated" /> : null}
      <ConfirmDialog
        open={confirmingDelete}
        title="Delete this campaign?"
        confirmLabel="Delete campaign"
        busy={remove.isPending}
        onCancel={() => setConfirmingDelete(false)}
        onConfirm={() => remove.mutate()}
      >
        <p>“{campaign.name}” is removed with its content and numbers. This cannot be undone.</p>
        {remove.error ? <ErrorNotice error={remove.error} /> : null}
      </ConfirmDialog>
    </section>
  );
}
