import { Fragment, useId, useState } from 'react';
import { keepPreviousData, useInfiniteQuery, useMutation, useQueryClient, type InfiniteData, type QueryClient } from '@tanstack/react-query';
import { unwrap } from '../api/client';
import { useCurrentProject } from '../projects/currentProject';
import { ErrorNotice } from '../components/ErrorNotice';
import { Loading } from '../components/Loading';
import { LoadMore } from '../components/LoadMore';
import { MessageStatus } from './WebhookParts';
import { MESSAGE_STATUS_LABELS, webhookKeys, type WebhookAttempt, type WebhookEndpoint, type WebhookMessage, type WebhookMessageStatus } from './webhooksApi';

/** How often the log (and its endpoint) is asked again while a message shown is pending (contract 21: at least every 5 s). */
export const MESSAGES_LIVE_MS = 5000;
/** Otherwise, while the endpoint is enabled: new events' messages show without a reload. */
const MESSAGES_IDLE_MS = 15_000;
const PAGE_SIZE = '20';

/** To the second: retries come seconds apart at first. */
const attemptTime = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit' });
const formatTime = (value: string) => attemptTime.format(new Date(value));
const timeOfDay = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit' });
const dayOf = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric' });

/** A moment in a narrow column: the time to the second, the day under it. */
function Moment({ value }: { value: string }) {
  const date = new Date(value);
  return (
    <time className="wh-moment" dateTime={value} title={formatTime(value)}>
      <span>{timeOfDay.format(date)}</span>
      <span className="muted">{dayOf.format(date)}</span>
    </time>
  );
}

function formatDuration(ms: number): string {
  return `${Math.round(ms).toLocaleString()} ms`;
}

/** What an attempt got back, in words: the HTTP status, or that there was no answer. */
function attemptOutcome(attempt: WebhookAttempt): string {
  return attempt.statusCode === null ? 'No answer' : `HTTP ${attempt.statusCode}`;
}

export type MessageFilter = WebhookMessageStatus | '';

type MessagePages = InfiniteData<{ data: WebhookMessage[] }>;

/** The log's query key for one filter. */
const messagesKey = (projectId: string, endpointId: string, status: MessageFilter) => [...webhookKeys.messages(projectId, endpointId), { status }] as const;

/** Whether a message the log shows (with this filter) is pending. */
export function messagesPending(queryClient: QueryClient, projectId: string, endpointId: string, status: MessageFilter): boolean {
  const data = queryClient.getQueryData<MessagePages>(messagesKey(projectId, endpointId, status));
  return Boolean(data?.pages.some((page) => page.data.some((m) => m.status === 'PENDING')));
}

/**
 * An endpoint's messages, newest first in cursor pages, asked again every 5 s while one shown is
 * pending (a retry is due, or a test or retry was just queued), every 15 s while the endpoint is
 * enabled (new events), and not otherwise.
 */
export function useWebhookMessages(endpointId: string, status: MessageFilter, endpointEnabled: boolean) {
  const { project, client } = useCurrentProject();
  const messages = useInfiniteQuery({
    queryKey: messagesKey(project.id, endpointId, status),
    queryFn: ({ pageParam }) =>
      unwrap(
        client.GET('/webhook-endpoints/{id}/messages', {
          params: {
            path: { id: endpointId },
            query: { limit: PAGE_SIZE, ...(status ? { status } : {}), ...(pageParam ? { cursor: pageParam } : {}) },
          },
        }),
      ),
    initialPageParam: undefined as string | undefined,
    getNextPageParam: (page) => (page.hasMore ? (page.cursor ?? undefined) : undefined),
    refetchInterval: (query) =>
      query.state.data?.pages.some((page) => page.data.some((m) => m.status === 'PENDING')) ? MESSAGES_LIVE_MS : endpointEnabled ? MESSAGES_IDLE_MS : false,
    // A filter changed: the rows shown stay until the new ones arrive.
    placeholderData: keepPreviousData,
  });
  const items = messages.data?.pages.flatMap((page) => page.data) ?? [];
  return { messages, items, pending: items.some((m) => m.status === 'PENDING') };
}

const FILTERS: Array<{ value: MessageFilter; label: string }> = [
  { value: '', label: 'All' },
  ...(Object.keys(MESSAGE_STATUS_LABELS) as WebhookMessageStatus[]).map((value) => ({ value, label: MESSAGE_STATUS_LABELS[value] })),
];

interface MessageLogProps {
  endpoint: WebhookEndpoint;
  log: ReturnType<typeof useWebhookMessages>;
  status: MessageFilter;
  onStatusChange: (status: MessageFilter) => void;
}

/** The message log: a status filter, the table with each message's attempts behind a toggle and its Retry, Load more. */
export function MessageLog({ endpoint, log, status, onStatusChange }: MessageLogProps) {
  const { project, client } = useCurrentProject();
  const queryClient = useQueryClient();
  const ids = { heading: useId(), filter: useId() };
  const [open, setOpen] = useState<ReadonlySet<string>>(new Set());
  const { messages, items, pending } = log;
  const retry = useMutation({
    mutationFn: (message: WebhookMessage) =>
      unwrap(client.POST('/webhook-endpoints/{id}/messages/{messageId}/retry', { params: { path: { id: endpoint.id, messageId: message.id } } })),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: webhookKeys.messages(project.id, endpoint.id) }),
  });

  function toggle(id: string) {
    setOpen((current) => {
      const next = new Set(current);
      if (next.has(id)) next.delete(id);
      else next.add(id);
      return next;
    });
  }

  return (
    <section className="card" aria-labelledby={ids.heading}>
      <div className="card-header">
        <h2 id={ids.heading}>Messages</h2>
        <p className="muted wh-live" role="status">
          {pending ? (
            <>
              <span className="live-dot" aria-hidden="true" /> Messages pending: refreshed every {MESSAGES_LIVE_MS / 1000} s
            </>
          ) : (
            'Kept 30 days'
          )}
        </p>
      </div>
      <div className="filters">
        <div className="field field-inline">
          <label htmlFor={ids.filter}>Status</label>
          <select id={ids.filter} value={status} onChange={(event) => onStatusChange(event.target.value as MessageFilter)}>
            {FILTERS.map((filter) => (
              <option key={filter.value} value={filter.value}>
                {filter.label}
              </option>
            ))}
          </select>
        </div>
      </div>
      {endpoint.enabled ? null : <p className="notice notice-warning wh-log-note">The endpoint is disabled: enable it to retry messages.</p>}
      {retry.error ? <ErrorNotice error={retry.error} /> : null}
      {messages.isPending ? (
        <Loading />
      ) : messages.isError ? (
        <ErrorNotice error={messages.error} />
      ) : items.length === 0 ? (
        <p className="empty">
          {status
            ? `No ${MESSAGE_STATUS_LABELS[status].toLowerCase()} message.`
            : 'No messages yet. Events matching the endpoint’s patterns show here as they are sent; “Send test event” sends one now.'}
        </p>
      ) : (
        <div className="table-wrap wh-table-wrap" role="region" aria-labelledby={ids.heading} tabIndex={0}>
          <table className="table wh-messages">
            <thead>
              <tr>
                <th scope="col">Event</th>
                <th scope="col">Status</th>
                <th scope="col" className="numeric">
                  Attempts
                </th>
                <th scope="col">Last attempt</th>
                <th scope="col">Next attempt</th>
                <th scope="col">Created</th>
                <th scope="col">
                  <span className="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {items.map((message) => (
                <MessageRows
                  key={message.id}
                  message={message}
                  expanded={open.has(message.id)}
                  onToggle={() => toggle(message.id)}
                  retrying={retry.isPending && retry.variables?.id === message.id}
                  canRetry={endpoint.enabled}
                  onRetry={() => retry.mutate(message)}
                />
              ))}
            </tbody>
          </table>
        </div>
      )}
      <LoadMore query={messages} />
    </section>
  );
}

interface MessageRowsProps {
  message: WebhookMessage;
  expanded: boolean;
  onToggle: () => void;
  retrying: boolean;
  canRetry: boolean;
  onRetry: () => void;
}

/** A message's row and, when expanded, a row under it with its attempts. */
function MessageRows({ message, expanded, onToggle, retrying, canRetry, onRetry }: MessageRowsProps) {
  const attemptsId = useId();
  const last = message.attempts.at(-1);
  const created = formatTime(message.createdAt);
  return (
    <Fragment>
      <tr className={expanded ? 'wh-expanded' : undefined}>
        <td>
          <code className="wh-event-type">{message.eventType}</code>
        </td>
        <td>
          <MessageStatus status={message.status} />
        </td>
        <td className="numeric">
          {message.attempts.length ? (
            <button
              type="button"
              className="wh-toggle"
              aria-expanded={expanded}
              aria-controls={attemptsId}
              aria-label={`${message.attempts.length} attempt${message.attempts.length === 1 ? '' : 's'} of the ${message.eventType} message of ${created}`}
              onClick={onToggle}
            >
              {message.attempts.length}
              <span className="wh-chevron" aria-hidden="true" />
            </button>
          ) : (
            '0'
          )}
        </td>
        <td className="wh-last-attempt">
          {last ? (
            <>
              <span className="wh-outcome">{attemptOutcome(last)}</span>
              <span className="muted"> · {formatDuration(last.durationMs)}</span>
              {last.error ? (
                <span className="wh-error" title={last.error}>
                  {last.error}
                </span>
              ) : null}
            </>
          ) : (
            <span className="muted">Not tried yet</span>
          )}
        </td>
        <td>{message.status === 'PENDING' && message.nextAttemptAt ? <Moment value={message.nextAttemptAt} /> : '—'}</td>
        <td>
          <Moment value={message.createdAt} />
        </td>
        <td className="cell-actions">
          <button
            type="button"
            className="button button-small"
            aria-label={`Retry the ${message.eventType} message of ${created}`}
            onClick={onRetry}
            disabled={!canRetry || retrying}
            aria-busy={retrying || undefined}
          >
            Retry
          </button>
        </td>
      </tr>
      {expanded ? (
        <tr id={attemptsId} className="wh-attempts-row">
          <td colSpan={7}>
            <div className="wh-attempts-wrap">
              <table className="wh-attempts">
                <caption className="visually-hidden">
                  Attempts of the {message.eventType} message of {created}
                </caption>
                <thead>
                  <tr>
                    <th scope="col">#</th>
                    <th scope="col">At</th>
                    <th scope="col">Status code</th>
                    <th scope="col" className="numeric">
                      Duration
                    </th>
                    <th scope="col">Error</th>
                  </tr>
                </thead>
                <tbody>
                  {message.attempts.map((attempt, index) => (
                    <tr key={`${attempt.at}-${index}`}>
                      <td>{index + 1}</td>
                      <td className="nowrap">
                        <time dateTime={attempt.at}>{formatTime(attempt.at)}</time>
                      </td>
                      <td>{attempt.statusCode ?? '—'}</td>
                      <td className="numeric nowrap">{formatDuration(attempt.durationMs)}</td>
                      <td className="wh-error-cell">{attempt.error ?? '—'}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          </td>
        </tr>
      ) : null}
    </Fragment>
  );
}
