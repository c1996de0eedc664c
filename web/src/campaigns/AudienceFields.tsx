import { useId } from 'react';
import { useQuery } from '@tanstack/react-query';
import { Link } from 'react-router';
import type { UseFormRegister, FieldErrors } from 'react-hook-form';
import { segmentsQuery } from '../segments/segmentsApi';
import { useCurrentProject } from '../projects/currentProject';
import { SelectField } from '../components/SelectField';
import { ErrorNotice } from '../components/ErrorNotice';
import { AUDIENCE_LABELS, contactsPhrase, readableCondition, type AudienceQuery, type AudienceType, useRecipientCount } from './campaignData';
import type { ComposeValues } from './composeForm';

/** An example the FILTERED audience starts from: the condition tree of segments (contract 10). */
export const EXAMPLE_CONDITION = JSON.stringify({ logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }] }] }, null, 2);

/**
 * The audience of a campaign: the "Audience" control (ALL / SEGMENT / FILTERED), the segment
 * picker or the filter (the API's condition tree, as JSON until the visual builder comes), and the
 * live count of the contacts who would receive it.
 */
export function AudienceFields({
  register,
  errors,
  audienceType,
  audience,
}: {
  register: UseFormRegister<ComposeValues>;
  errors: FieldErrors<ComposeValues>;
  audienceType: AudienceType;
  /** The audience as the count endpoint takes it; null while incomplete (no segment, a filter that is not JSON). */
  audience: AudienceQuery | null;
}) {
  const { project, client } = useCurrentProject();
  const conditionId = useId();
  const segments = useQuery({
    ...segmentsQuery(project.id, client),
    enabled: audienceType !== 'ALL',
  });
  const segmentNames = new Map((segments.data ?? []).map((segment) => [segment.id, segment.name]));
  const count = useRecipientCount(client, project.id, audience);

  return (
    <fieldset className="compose-section">
      <legend>Recipients</legend>
      <SelectField
        label="Audience"
        options={(Object.keys(AUDIENCE_LABELS) as AudienceType[]).map((value) => ({ value, label: AUDIENCE_LABELS[value] }))}
        {...register('audienceType')}
      />
      {audienceType === 'SEGMENT' ? (
        segments.isPending ? (
          <p className="muted">Loading segments…</p>
        ) : segments.isError ? (
          <ErrorNotice error={segments.error} title="The segments could not be loaded" />
        ) : segments.data.length === 0 ? (
          <p className="notice">
            This project has no segments yet: <Link to={`/projects/${project.id}/segments`}>create one on the Segments page</Link>, or send to all contacts.
          </p>
        ) : (
          <SelectField
            label="Segment"
            error={errors.segmentId?.message}
            options={[
              { value: '', label: 'Choose a segment' },
              ...segments.data.map((segment) => ({ value: segment.id, label: `${segment.name} (${contactsPhrase(segment.memberCount)})` })),
            ]}
            {...register('segmentId')}
          />
        )
      ) : null}
      {audienceType === 'FILTERED' ? (
        <div className="field">
          <label htmlFor={conditionId}>Filter</label>
          <textarea
            id={conditionId}
            className="code-input"
            rows={8}
            spellCheck={false}
            aria-invalid={errors.audienceCondition ? true : undefined}
            aria-describedby={`${conditionId}-hint${errors.audienceCondition ? ` ${conditionId}-error` : ''}`}
            {...register('audienceCondition')}
          />
          <p id={`${conditionId}-hint`} className="field-hint">
            A condition tree, as segments take it: <code>logic</code> (AND or OR) over <code>groups</code> of <code>filters</code> (<code>field</code>,{' '}
            <code>operator</code>, <code>value</code>). Fields: email, subscribed, createdAt, data.&lt;key&gt;, event.&lt;name&gt;, segment.&lt;id&gt;.
          </p>
          {audience?.audienceType === 'FILTERED' && readableCondition(audience.audienceCondition, segmentNames) ? (
            <p className="condition-reads">
              <span className="muted">Reads:</span> {readableCondition(audience.audienceCondition, segmentNames)}
            </p>
          ) : null}
          {errors.audienceCondition ? (
            <p id={`${conditionId}-error`} className="field-error">
              {errors.audienceCondition.message}
            </p>
          ) : null}
        </div>
      ) : null}
      <RecipientCount audience={audience} count={count.data} pending={count.isFetching} error={count.error} />
    </fieldset>
  );
}

/** The live count, in a status region so a screen reader hears it change. */
export function RecipientCount({ audience, count, pending, error }: { audience: AudienceQuery | null; count?: number; pending: boolean; error: unknown }) {
  let text: string;
  if (!audience) text = 'Complete the audience to see how many contacts will receive it.';
  else if (error) text = error instanceof Error ? `The recipients could not be counted: ${error.message}` : 'The recipients could not be counted.';
  else if (count === undefined) text = 'Counting recipients…';
  else text = `${contactsPhrase(count)} will receive it`;
  return (
    <p className={error ? 'recipient-count recipient-count-error' : 'recipient-count'} role="status" aria-busy={pending || undefined}>
      {text}
    </p>
  );
}
