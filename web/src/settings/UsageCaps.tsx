import { useId } from 'react';
import { useForm } from 'react-hook-form';
import { zodResolver } from '@hookform/resolvers/zod';
import { z } from 'zod';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import type { components } from '../../../client/mailroomClient';
import { limitsBody, USAGE_CATEGORIES, type UsageCategory } from '../../../shared/billingSchemas';
import { sessionClient, unwrap } from '../api/client';
import { configQuery, queryKeys } from '../api/queries';
import { useCurrentProject } from '../projects/currentProject';
import { ErrorNotice } from '../components/ErrorNotice';
import { Loading } from '../components/Loading';
import { TextField } from '../components/TextField';
import { showFieldErrors } from '../components/formErrors';
import { formatNumber } from '../components/format';

type CategoryLimit = components['schemas']['BillingCategoryLimit'];
type BillingLimits = components['schemas']['BillingLimits'];

const CATEGORIES: Record<UsageCategory, { label: string; what: string }> = {
  transactional: { label: 'Transactional', what: 'POST /v1/send and the SMTP relay' },
  campaigns: { label: 'Campaigns', what: 'campaign sends' },
  workflows: { label: 'Workflows', what: 'workflow email steps' },
  inbound: { label: 'Inbound', what: 'mail received on the project’s domains' },
};

/** The caps form: a field per category, empty for no cap, checked by the API's own body schema. */
const capText = z.string().transform((value) => (value.trim() === '' ? null : Number(value.trim())));
const capsForm = z.object(Object.fromEntries(USAGE_CATEGORIES.map((c) => [c, capText])) as Record<UsageCategory, typeof capText>).pipe(limitsBody);
type CapsFormValues = z.input<typeof capsForm>;

function capsAsText(limits: BillingLimits): CapsFormValues {
  return Object.fromEntries(USAGE_CATEGORIES.map((c) => [c, limits[c].limit === null ? '' : String(limits[c].limit)])) as CapsFormValues;
}

/** "1 December" in UTC: the calendar month the API counts in. */
function monthStart(): string {
  const now = new Date();
  return new Intl.DateTimeFormat(undefined, { day: 'numeric', month: 'long', timeZone: 'UTC' }).format(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
}

/** Contract 17's categories: this month's use against each cap, and the caps (owners and admins change them). */
export function UsageCaps({ manages }: { manages: boolean }) {
  const { project } = useCurrentProject();
  const config = useQuery(configQuery);
  const headingId = useId();
  const limitsKey = [...queryKeys.project(project.id), 'billing-limits'];
  const limits = useQuery({
    queryKey: limitsKey,
    queryFn: () => unwrap(sessionClient.GET('/users/@me/projects/{id}/billing-limits', { params: { path: { id: project.id } } })),
    // Sends go on while the page is open.
    refetchInterval: 30_000,
  });

  return (
    <section className="card" aria-labelledby={headingId}>
      <div className="card-header">
        <h2 id={headingId}>Usage this month</h2>
        <p className="muted">Emails since {monthStart()} (UTC)</p>
      </div>
      {config.data && !config.data.billing ? (
        <p className="notice billing-note">
          Billing is off on this instance: nothing is charged. The caps below are limits you set yourself; a send that would pass one is refused.
        </p>
      ) : config.data?.billing ? (
        <p className="notice billing-note">
          Billing is on: this month’s usage is what the project is billed for. The caps below stop sending before a limit you choose.
        </p>
      ) : null}
      {limits.isPending ? (
        <Loading />
      ) : limits.isError ? (
        <ErrorNotice error={limits.error} />
      ) : (
        <>
          <ul className="usage-list">
            {USAGE_CATEGORIES.map((category) => (
              <UsageRow key={category} category={category} line={limits.data[category]} />
            ))}
          </ul>
          {manages ? (
            <CapsForm key={project.id} current={limits.data} limitsKey={limitsKey} />
          ) : (
            <p className="muted">Only the project’s owners and admins can change the caps.</p>
          )}
        </>
      )}
    </section>
  );
}

function UsageRow({ category, line }: { category: UsageCategory; line: CategoryLimit }) {
  const { label, what } = CATEGORIES[category];
  const labelId = useId();
  const state = line.isBlocked ? 'Cap reached' : line.isWarning ? 'Near the cap' : null;
  return (
    <li className="usage-row">
      <div className="usage-head">
        <span id={labelId} className="usage-label">
          {label}
        </span>
        <span className="usage-what muted">{what}</span>
        {state ? <span className={line.isBlocked ? 'badge badge-danger' : 'badge badge-warning'}>{state}</span> : null}
      </div>
      <p className="usage-figures">
        <strong>{formatNumber(line.usage)}</strong>{' '}
        {line.limit === null ? <span className="muted">emails · no cap</span> : <span className="muted">of {formatNumber(line.limit)} emails</span>}
        {line.limit !== null ? <span className="usage-percent">{formatNumber(line.percentage)}%</span> : null}
      </p>
      {line.limit !== null ? (
        <progress
          className={`usage-bar${line.isBlocked ? ' usage-bar-blocked' : line.isWarning ? ' usage-bar-warning' : ''}`}
          aria-labelledby={labelId}
          value={Math.min(line.usage, line.limit)}
          max={line.limit}
        />
      ) : null}
    </li>
  );
}

function CapsForm({ current, limitsKey }: { current: BillingLimits; limitsKey: readonly unknown[] }) {
  const { project } = useCurrentProject();
  const queryClient = useQueryClient();
  const { register, handleSubmit, setError, formState, reset } = useForm<CapsFormValues, unknown, z.output<typeof capsForm>>({
    resolver: zodResolver(capsForm),
    defaultValues: capsAsText(current),
  });
  const save = useMutation({
    mutationFn: (body: z.output<typeof capsForm>) =>
      unwrap(sessionClient.PUT('/users/@me/projects/{id}/billing-limits', { params: { path: { id: project.id } }, body })),
    onSuccess: (saved) => {
      queryClient.setQueryData(limitsKey, saved);
      reset(capsAsText(saved));
    },
    onError: (error) => showFieldErrors(setError, error, USAGE_CATEGORIES),
  });
  return (
    <form className="form caps-form" noValidate onSubmit={(event) => void handleSubmit((body) => save.mutate(body))(event)}>
      <h3>Monthly caps</h3>
      <p className="muted">Emails per calendar month in each category; leave a field empty for no cap.</p>
      <div className="caps-fields">
        {USAGE_CATEGORIES.map((category) => (
          <TextField
            key={category}
            label={CATEGORIES[category].label}
            inputMode="numeric"
            autoComplete="off"
            placeholder="No cap"
            error={formState.errors[category]?.message}
            {...register(category)}
          />
        ))}
      </div>
      <div className="form-actions">
        <button type="submit" className="button button-primary" disabled={save.isPending} aria-busy={save.isPending || undefined}>
          Set caps
        </button>
        <span role="status" className="muted">
          {save.isSuccess && !formState.isDirty ? 'Caps set' : ''}
        </span>
      </div>
      {save.error ? <ErrorNotice error={save.error} /> : null}
    </form>
  );
}
