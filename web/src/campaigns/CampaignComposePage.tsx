import { useId, useRef, useState } from 'react';
import type { EditorView } from '@codemirror/view';
import { Controller, useForm, useWatch } from 'react-hook-form';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useNavigate, useParams } from 'react-router';
import { unwrap } from '../api/client';
import { configQuery } from '../api/queries';
import { useCurrentProject } from '../projects/currentProject';
import { TextField } from '../components/TextField';
import { SelectField } from '../components/SelectField';
import { ErrorNotice } from '../components/ErrorNotice';
import { Loading } from '../components/Loading';
import { PageTitle } from '../components/PageTitle';
import { showFieldErrors } from '../components/formErrors';
import { AudienceFields, EXAMPLE_CONDITION } from './AudienceFields';
import { BodyPreview } from './BodyPreview';
import { HtmlEditor } from '../templates/HtmlEditor';
import { campaignKeys, campaignQuery, STATUS_LABELS, TYPE_HINTS, TYPE_LABELS, useDebounced, type Campaign, type CampaignType } from './campaignData';
import { audienceFrom, campaignBody, COMPOSE_FIELDS, parseCondition, valuesOf, type ComposeValues } from './composeForm';
import './campaigns.css';

const STARTER_BODY = `<h1>Hello {{firstName ?? "there"}},</h1>
<p>Here is what is new this month.</p>
<p><a href="https://example.com">Read more</a></p>`;

/** /campaigns/new: a new draft. */
export function NewCampaignPage() {
  const { project } = useCurrentProject();
  const config = useQuery(configQuery);
  if (config.isPending) return <Loading />;
  const senderDomain = config.data?.localOutbox.senderDomain;
  return (
    <CampaignComposer
      title="New campaign"
      projectName={project.name}
      initial={{
        name: '',
        subject: '',
        from: senderDomain ? `news@${senderDomain}` : '',
        fromName: '',
        replyTo: '',
        type: 'MARKETING',
        body: STARTER_BODY,
        audienceType: 'ALL',
        segmentId: '',
        audienceCondition: '',
      }}
    />
  );
}

/** /campaigns/:campaignId/edit: a DRAFT (or a SCHEDULED campaign, which the API lets change until it starts). */
export function EditCampaignPage() {
  const { project, client } = useCurrentProject();
  const { campaignId = '' } = useParams();
  const campaign = useQuery({ ...campaignQuery(client, project.id, campaignId), refetchInterval: false });
  if (campaign.isPending) return <Loading label="Loading the campaign…" />;
  if (campaign.isError) {
    return (
      <div className="page">
        <PageTitle parts={['Campaign', project.name]} />
        <h1>Campaign</h1>
        <ErrorNotice error={campaign.error} title="The campaign could not be loaded" />
        <Link to={`/projects/${project.id}/campaigns`}>Back to campaigns</Link>
      </div>
    );
  }
  if (campaign.data.status !== 'DRAFT' && campaign.data.status !== 'SCHEDULED') {
    return (
      <div className="page">
        <PageTitle parts={[campaign.data.name, project.name]} />
        <h1>{campaign.data.name}</h1>
        <p className="notice">
          This campaign is {STATUS_LABELS[campaign.data.status].toLowerCase()}: only a draft or a scheduled campaign can be edited.{' '}
          <Link to={`/projects/${project.id}/campaigns/${campaignId}`}>Open the campaign</Link>
        </p>
      </div>
    );
  }
  return <CampaignComposer title={`Edit ${campaign.data.name}`} projectName={project.name} campaign={campaign.data} initial={valuesOf(campaign.data)} />;
}

function CampaignComposer({ title, projectName, campaign, initial }: { title: string; projectName: string; campaign?: Campaign; initial: ComposeValues }) {
  const { project, client } = useCurrentProject();
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const bodyId = useId();
  const bodyLabelId = `${bodyId}-label`;
  const editor = useRef<EditorView | null>(null);
  const templateId = useId();
  const typeHintId = useId();
  const [saved, setSaved] = useState(false);
  const { register, handleSubmit, setError, setValue, control, formState } = useForm<ComposeValues>({ defaultValues: initial });
  const errors = formState.errors;
  const [type, audienceType, segmentId, audienceCondition, body, subject] = useWatch({
    control,
    name: ['type', 'audienceType', 'segmentId', 'audienceCondition', 'body', 'subject'],
  });
  const audience = useDebounced(audienceFrom({ type, audienceType, segmentId, audienceCondition }), 400);
  const previewBody = useDebounced(body, 300);
  const previewSubject = useDebounced(subject, 300);

  const templates = useQuery({
    queryKey: [...campaignKeys.all(project.id), 'templates-to-start-from'],
    queryFn: () => unwrap(client.GET('/templates', { params: { query: { pageSize: 100, sort: 'updatedAt' } } })),
    enabled: !campaign,
  });

  const save = useMutation({
    /** `next`: where a successful save goes, the review page or nowhere (stay and keep editing). */
    mutationFn: async ({ values }: { values: ComposeValues; next: 'review' | 'stay' }) => {
      const condition = values.audienceType === 'FILTERED' ? parseCondition(values.audienceCondition) : { ok: true as const, value: null };
      if (!condition.ok) {
        setError('audienceCondition', { type: 'client', message: condition.message });
        throw new Error(condition.message);
      }
      const fields = campaignBody(values, condition.value);
      if (campaign) return unwrap(client.PUT('/campaigns/{id}', { params: { path: { id: campaign.id } }, body: fields }));
      return (await unwrap(client.POST('/campaigns', { body: fields }))).data;
    },
    onSuccess: async (stored, { next }) => {
      queryClient.setQueryData(campaignKeys.one(project.id, stored.id), stored);
      await queryClient.invalidateQueries({ queryKey: campaignKeys.all(project.id) });
      if (next === 'review') {
        void navigate(`/projects/${project.id}/campaigns/${stored.id}`);
      } else if (!campaign) {
        void navigate(`/projects/${project.id}/campaigns/${stored.id}/edit`, { replace: true });
      } else {
        setSaved(true);
      }
    },
    onError: (error) => showFieldErrors(setError, error, COMPOSE_FIELDS),
  });

  function startFrom(templateIdValue: string) {
    const template = templates.data?.data.find((t) => t.id === templateIdValue);
    if (!template) return;
    setValue('subject', template.subject, { shouldDirty: true });
    setValue('body', template.body, { shouldDirty: true });
    setValue('from', template.from, { shouldDirty: true });
    setValue('fromName', template.fromName ?? '', { shouldDirty: true });
    setValue('replyTo', template.replyTo ?? '', { shouldDirty: true });
    setValue('type', template.type, { shouldDirty: true });
  }

  return (
    <div className="page page-wide">
      <PageTitle parts={[title, projectName]} />
      <header className="page-header">
        <p className="breadcrumb">
          <Link to={`/projects/${project.id}/campaigns`}>Campaigns</Link>
          {campaign ? (
            <>
              {' / '}
              <Link to={`/projects/${project.id}/campaigns/${campaign.id}`}>{campaign.name}</Link>
            </>
          ) : null}
        </p>
        <h1>{title}</h1>
        <p className="muted">Write the email, choose who receives it, then review it before it is sent.</p>
      </header>
      <form
        className="compose"
        noValidate
        onSubmit={(event) => {
          // Which button sent the form says where to go after saving.
          const next = event.nativeEvent.submitter?.dataset.next === 'stay' ? 'stay' : 'review';
          setSaved(false);
          void handleSubmit((values) => save.mutate({ values, next }))(event);
        }}
      >
        <div className="compose-fields">
          <fieldset className="compose-section card">
            <legend>Content</legend>
            {!campaign && templates.data && templates.data.data.length > 0 ? (
              <div className="field">
                <label htmlFor={templateId}>Start from a template</label>
                <select id={templateId} defaultValue="" onChange={(event) => startFrom(event.target.value)}>
                  <option value="">No template</option>
                  {templates.data.data.map((template) => (
                    <option key={template.id} value={template.id}>
                      {template.name}
                    </option>
                  ))}
                </select>
              </div>
            ) : null}
            <TextField label="Name" hint="For you: recipients never see it." autoComplete="off" error={errors.name?.message} {...register('name')} />
            <TextField
              label="Subject"
              autoComplete="off"
              hint={
                <>
                  Variables such as <code>{'{{firstName}}'}</code> are filled in for each contact.
                </>
              }
              error={errors.subject?.message}
              {...register('subject')}
            />
            <div className="field">
              <label id={bodyLabelId} onClick={() => editor.current?.focus()}>
                Body
              </label>
              <p id={`${bodyId}-hint`} className="field-hint">
                HTML (or MJML starting with <code>&lt;mjml&gt;</code>) with Handlebars variables: <code>{'{{firstName ?? "there"}}'}</code>,{' '}
                <code>{'{{unsubscribeUrl}}'}</code>. Tab indents; press Esc then Tab to leave the editor.
              </p>
              <Controller
                control={control}
                name="body"
                render={({ field }) => (
                  <HtmlEditor
                    labelledBy={bodyLabelId}
                    describedBy={`${bodyId}-hint${errors.body ? ` ${bodyId}-error` : ''}`}
                    invalid={Boolean(errors.body)}
                    value={field.value}
                    onChange={field.onChange}
                    onBlur={field.onBlur}
                    editorRef={(view) => {
                      editor.current = view;
                    }}
                  />
                )}
              />
              {errors.body ? (
                <p id={`${bodyId}-error`} className="field-error">
                  {errors.body.message}
                </p>
              ) : null}
            </div>
          </fieldset>
          <fieldset className="compose-section card">
            <legend>Sender</legend>
            <div className="form-row">
              <TextField label="From" type="email" autoComplete="off" error={errors.from?.message} {...register('from')} />
              <TextField label="From name" autoComplete="off" error={errors.fromName?.message} {...register('fromName')} />
            </div>
            <TextField
              label="Reply to"
              type="email"
              autoComplete="off"
              hint="Optional: where replies go, if not to the From address."
              error={errors.replyTo?.message}
              {...register('replyTo')}
            />
            <div className="type-field">
              <SelectField
                label="Type"
                options={(Object.keys(TYPE_LABELS) as CampaignType[]).map((value) => ({ value, label: TYPE_LABELS[value] }))}
                error={errors.type?.message}
                aria-describedby={typeHintId}
                {...register('type')}
              />
              <p id={typeHintId} className="field-hint">
                {TYPE_HINTS[type]}
              </p>
            </div>
          </fieldset>
          <div className="card">
            <AudienceFields register={register} errors={errors} audienceType={audienceType} audience={audience} />
            {audienceType === 'FILTERED' && !audienceCondition ? (
              <button type="button" className="button button-small" onClick={() => setValue('audienceCondition', EXAMPLE_CONDITION, { shouldDirty: true })}>
                Insert an example filter
              </button>
            ) : null}
          </div>
          {save.error ? <ErrorNotice error={save.error} title="The campaign was not saved" /> : null}
          <div className="form-actions compose-actions">
            <button
              type="submit"
              className="button button-primary"
              data-next="review"
              disabled={save.isPending}
              aria-busy={(save.isPending && save.variables.next === 'review') || undefined}
            >
              Save and review
            </button>
            <button
              type="submit"
              className="button"
              data-next="stay"
              disabled={save.isPending}
              aria-busy={(save.isPending && save.variables.next === 'stay') || undefined}
            >
              Save draft
            </button>
            <span role="status" className="save-status">
              {saved ? 'Saved' : ''}
            </span>
          </div>
        </div>
        <aside className="compose-preview" aria-labelledby="preview-heading">
          <h2 id="preview-heading">Preview</h2>
          <BodyPreview subject={previewSubject} body={previewBody} type={type} />
        </aside>
      </form>
    </div>
  );
}
