import { useId, useState } from 'react';
import { useForm, useWatch } from 'react-hook-form';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useNavigate } from 'react-router';
import { ApiError, unwrap } from '../api/client';
import { useCurrentProject } from '../projects/currentProject';
import { TextField } from '../components/TextField';
import { SelectField } from '../components/SelectField';
import { ErrorNotice } from '../components/ErrorNotice';
import { Loading } from '../components/Loading';
import { PageTitle } from '../components/PageTitle';
import { formatDateTime, formatNumber } from '../components/format';
import { segmentKeys, segmentsQuery, type Segment } from './segmentsApi';
import './segments.css';

/** The project's segments: name, type, tracked membership, member count with a refresh; "New segment". */
export function SegmentsPage() {
  const { project, client } = useCurrentProject();
  const segments = useQuery(segmentsQuery(project.id, client));
  const [creating, setCreating] = useState(false);
  return (
    <div className="page">
      <PageTitle parts={['Segments', project.name]} />
      <header className="page-header seg-header">
        <div>
          <h1>Segments</h1>
          <p className="muted">Groups of contacts: dynamic ones match a condition, static ones hold the contacts you add.</p>
        </div>
        {creating ? null : (
          <button type="button" className="button button-primary" onClick={() => setCreating(true)}>
            New segment
          </button>
        )}
      </header>
      {creating ? <NewSegmentForm onCancel={() => setCreating(false)} /> : null}
      <section className="card" aria-labelledby="segments-heading">
        <h2 id="segments-heading" className="visually-hidden">
          All segments
        </h2>
        {segments.isPending ? (
          <Loading />
        ) : segments.isError ? (
          <ErrorNotice error={segments.error} />
        ) : segments.data.length === 0 ? (
          <p className="empty">No segments yet. Create one with “New segment”.</p>
        ) : (
          <div className="table-wrap seg-table-wrap" role="region" aria-labelledby="segments-heading" tabIndex={0}>
            <table className="table">
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Type</th>
                  <th scope="col">Tracked</th>
                  <th scope="col">Members</th>
                  <th scope="col" className="seg-wide-only">
                    Updated
                  </th>
                </tr>
              </thead>
              <tbody>
                {segments.data.map((segment) => (
                  <SegmentRow key={segment.id} segment={segment} />
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>
    </div>
  );
}

function SegmentRow({ segment }: { segment: Segment }) {
  const { project, client } = useCurrentProject();
  const queryClient = useQueryClient();
  const refresh = useMutation({
    mutationFn: () => unwrap(client.POST('/segments/{id}/refresh', { params: { path: { id: segment.id } } })),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: segmentKeys.all(project.id) }),
  });
  return (
    <tr>
      <td>
        <Link to={segment.id}>{segment.name}</Link>
        {segment.description ? <span className="seg-description">{segment.description}</span> : null}
      </td>
      <td>
        <span className="badge">{segment.type === 'DYNAMIC' ? 'Dynamic' : 'Static'}</span>
      </td>
      <td>{segment.trackMembership ? 'Yes' : 'No'}</td>
      <td className="nowrap">
        <span className="seg-count">{formatNumber(segment.memberCount)}</span>
        <button
          type="button"
          className="button button-small button-quiet"
          aria-label={`Refresh the member count of ${segment.name}`}
          onClick={() => refresh.mutate()}
          disabled={refresh.isPending}
          aria-busy={refresh.isPending || undefined}
        >
          Refresh
        </button>
        {refresh.error ? <ErrorNotice error={refresh.error} /> : null}
      </td>
      <td className="nowrap seg-wide-only">{formatDateTime(segment.updatedAt)}</td>
    </tr>
  );
}

const EXAMPLE_CONDITION = JSON.stringify({ logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }] }] }, null, 2);

interface NewSegmentValues {
  name: string;
  type: 'DYNAMIC' | 'STATIC';
  condition: string;
  trackMembership: boolean;
}

/**
 * A new segment. A dynamic one's condition is the API's JSON condition tree, typed in a textarea
 * until the visual builder comes; the API checks it (its 422 names each problem by its path in the
 * tree, listed under the field).
 */
function NewSegmentForm({ onCancel }: { onCancel: () => void }) {
  const { project, client } = useCurrentProject();
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const ids = { condition: useId(), conditionHint: useId(), conditionErrors: useId(), track: useId() };
  const { register, handleSubmit, setError, formState, control } = useForm<NewSegmentValues>({
    defaultValues: { name: '', type: 'DYNAMIC', condition: EXAMPLE_CONDITION, trackMembership: false },
  });
  const type = useWatch({ control, name: 'type' });
  const create = useMutation({
    mutationFn: (values: NewSegmentValues) => {
      const body =
        values.type === 'DYNAMIC'
          ? { name: values.name, type: values.type, condition: JSON.parse(values.condition) as unknown, trackMembership: values.trackMembership }
          : { name: values.name, type: values.type };
      return unwrap(client.POST('/segments', { body }));
    },
    onSuccess: async (segment) => {
      await queryClient.invalidateQueries({ queryKey: segmentKeys.all(project.id) });
      await navigate(segment.id);
    },
    onError: (error) => {
      if (!(error instanceof ApiError)) return;
      const name = error.fieldErrors.find((e) => e.field === 'name');
      if (name) setError('name', { type: 'server', message: name.message });
    },
  });
  const conditionErrors = create.error instanceof ApiError ? create.error.fieldErrors.filter((e) => e.field.startsWith('condition')) : [];

  function submit(values: NewSegmentValues) {
    if (values.type === 'DYNAMIC') {
      try {
        JSON.parse(values.condition);
      } catch (err) {
        setError('condition', { type: 'json', message: `The condition is not valid JSON: ${err instanceof Error ? err.message : String(err)}` });
        return;
      }
    }
    create.mutate(values);
  }

  const conditionMessage = formState.errors.condition?.message;
  const describedBy = [ids.conditionHint, conditionMessage || conditionErrors.length ? ids.conditionErrors : null].filter(Boolean).join(' ');
  return (
    <section className="card" aria-labelledby="new-segment-heading">
      <h2 id="new-segment-heading">New segment</h2>
      <form className="form" noValidate onSubmit={(event) => void handleSubmit(submit)(event)}>
        <div className="seg-form-row">
          <TextField label="Name" autoComplete="off" error={formState.errors.name?.message} {...register('name')} />
          <SelectField
            label="Type"
            options={[
              { value: 'DYNAMIC', label: 'Dynamic (matches a condition)' },
              { value: 'STATIC', label: 'Static (contacts added by hand)' },
            ]}
            {...register('type')}
          />
        </div>
        {type === 'DYNAMIC' ? (
          <>
            <div className="field">
              <label htmlFor={ids.condition}>Condition</label>
              <textarea
                id={ids.condition}
                className="seg-textarea seg-code"
                rows={10}
                spellCheck={false}
                aria-invalid={conditionMessage || conditionErrors.length ? true : undefined}
                aria-describedby={describedBy}
                {...register('condition')}
              />
              <p id={ids.conditionHint} className="field-hint">
                The condition tree as JSON: <code>logic</code> (AND or OR) and <code>groups</code> of <code>filters</code> (<code>field</code>,{' '}
                <code>operator</code>, <code>value</code>, <code>unit</code>).
              </p>
              {conditionMessage || conditionErrors.length ? (
                <ul id={ids.conditionErrors} className="seg-errors">
                  {conditionMessage ? <li className="field-error">{conditionMessage}</li> : null}
                  {conditionErrors.map((error) => (
                    <li key={`${error.field}-${error.message}`} className="field-error">
                      <code>{error.field}</code>: {error.message}
                    </li>
                  ))}
                </ul>
              ) : null}
            </div>
            <div className="seg-checkbox">
              <input id={ids.track} type="checkbox" {...register('trackMembership')} />
              <label htmlFor={ids.track}>Track membership (record entry and exit events as contacts join and leave)</label>
            </div>
          </>
        ) : null}
        {create.error && !formState.errors.name ? <ErrorNotice error={create.error} /> : null}
        <div className="form-actions">
          <button type="submit" className="button button-primary" disabled={create.isPending} aria-busy={create.isPending || undefined}>
            Create segment
          </button>
          <button type="button" className="button" onClick={onCancel}>
            Cancel
          </button>
        </div>
      </form>
    </section>
  );
}
