import { useId, useRef, useState } from 'react';
import { Controller, useForm, useWatch } from 'react-hook-form';
import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useNavigate, useParams } from 'react-router';
import type { EditorView } from '@codemirror/view';
import { unwrap } from '../api/client';
import { configQuery, meQuery } from '../api/queries';
import { useCurrentProject } from '../projects/currentProject';
import { ConfirmDialog } from '../components/ConfirmDialog';
import { ErrorNotice } from '../components/ErrorNotice';
import { Loading } from '../components/Loading';
import { MailPreview } from '../components/MailPreview';
import { PageTitle } from '../components/PageTitle';
import { SelectField } from '../components/SelectField';
import { TextField } from '../components/TextField';
import { showFieldErrors } from '../components/formErrors';
import { formatDateTime } from '../components/format';
import { ContactPicker, type PickedContact } from './ContactPicker';
import { HtmlEditor } from './HtmlEditor';
import { SendTestDialog } from './SendTestDialog';
import { templateKeys, TYPE_HINTS, TYPE_LABELS, type Template, type TemplateType } from './templatesApi';
import { useDebounced } from './useDebounced';
import './templates.css';

interface TemplateValues {
  name: string;
  description: string;
  subject: string;
  from: string;
  fromName: string;
  replyTo: string;
  type: TemplateType;
  body: string;
}

const FIELDS = ['name', 'description', 'subject', 'from', 'fromName', 'replyTo', 'type', 'body'] as const;

const STARTER_BODY = `<html>
  <body style="font-family: Arial, sans-serif; color: #1f2328;">
    <h1>Hello {{firstName ?? "there"}}</h1>
    <p>Write your message here.</p>
  </body>
</html>
`;

function valuesOf(template: Template): TemplateValues {
  return {
    name: template.name,
    description: template.description ?? '',
    subject: template.subject,
    from: template.from,
    fromName: template.fromName ?? '',
    replyTo: template.replyTo ?? '',
    type: template.type,
    body: template.body,
  };
}

/** The API's body: optional fields left empty are cleared (null), as the API reads "". */
function bodyOf(values: TemplateValues) {
  return {
    name: values.name,
    description: values.description || null,
    subject: values.subject,
    body: values.body,
    from: values.from,
    fromName: values.fromName || null,
    replyTo: values.replyTo || null,
    type: values.type,
  };
}

/** /templates/new */
export function NewTemplatePage() {
  const config = useQuery(configQuery);
  if (config.isPending) return <Loading />;
  const outboxDomain = config.data?.localOutbox.senderDomain;
  return (
    <TemplateEditor
      initial={{
        name: '',
        description: '',
        subject: '',
        from: outboxDomain ? `hello@${outboxDomain}` : '',
        fromName: '',
        replyTo: '',
        type: 'MARKETING',
        body: STARTER_BODY,
      }}
    />
  );
}

/** /templates/:templateId */
export function TemplatePage() {
  const { project, client } = useCurrentProject();
  const { templateId = '' } = useParams();
  const template = useQuery({
    queryKey: templateKeys.one(project.id, templateId),
    queryFn: () => unwrap(client.GET('/templates/{id}', { params: { path: { id: templateId } } })),
  });
  if (template.isPending) {
    return (
      <div className="page">
        <PageTitle parts={['Template', project.name]} />
        <Loading />
      </div>
    );
  }
  if (template.isError) {
    return (
      <div className="page">
        <PageTitle parts={['Template', project.name]} />
        <header className="page-header">
          <h1>Template</h1>
        </header>
        <ErrorNotice error={template.error} />
        <p>
          <Link to="..">Back to the templates</Link>
        </p>
      </div>
    );
  }
  // Keyed by id: a duplicate opens as a fresh form.
  return <TemplateEditor key={template.data.id} template={template.data} initial={valuesOf(template.data)} />;
}

/**
 * A template's page: its fields, the HTML body in CodeMirror (the field labelled "Body"), and a
 * live preview rendered by the API exactly as sending renders it (POST /templates/preview) for a
 * chosen contact, without the open pixel or click redirects (contract 21), in the sandboxed frame
 * of MailPreview; the variables it reads; Save, Send test, Duplicate, Delete, and where it is used.
 */
function TemplateEditor({ template, initial }: { template?: Template; initial: TemplateValues }) {
  const { project, client } = useCurrentProject();
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const me = useQuery(meQuery);
  const formId = useId();
  const bodyLabelId = useId();
  const bodyHintId = useId();
  const bodyErrorId = useId();
  const editor = useRef<EditorView | null>(null);
  const [status, setStatus] = useState('');
  const [confirmingDelete, setConfirmingDelete] = useState(false);
  const [sendingTest, setSendingTest] = useState(false);
  const [contact, setContact] = useState<PickedContact | null>(null);

  const { register, handleSubmit, control, formState, reset, setError } = useForm<TemplateValues>({ defaultValues: initial });
  const [subject, body, type] = useWatch({ control, name: ['subject', 'body', 'type'] });

  // The preview follows the form 400 ms after the last keystroke; the previous render stays while the next loads.
  // Debounced as text: an object made anew each render would restart the timer forever.
  const previewKey = useDebounced(JSON.stringify({ subject, body, type, contactId: contact?.id ?? null }), 400);
  const previewInput = JSON.parse(previewKey) as { subject: string; body: string; type: TemplateType; contactId: string | null };
  const preview = useQuery({
    queryKey: templateKeys.preview(project.id, previewInput),
    queryFn: ({ signal }) =>
      unwrap(
        client.POST('/templates/preview', {
          body: {
            subject: previewInput.subject,
            body: previewInput.body,
            type: previewInput.type,
            ...(previewInput.contactId ? { contactId: previewInput.contactId } : {}),
          },
          signal,
        }),
      ),
    placeholderData: keepPreviousData,
    retry: false,
    staleTime: 60_000,
  });

  const save = useMutation({
    mutationFn: (values: TemplateValues) =>
      template
        ? unwrap(client.PATCH('/templates/{id}', { params: { path: { id: template.id } }, body: bodyOf(values) }))
        : unwrap(client.POST('/templates', { body: bodyOf(values) })),
    onSuccess: async (saved) => {
      queryClient.setQueryData(templateKeys.one(project.id, saved.id), saved);
      await queryClient.invalidateQueries({ queryKey: [...templateKeys.all(project.id), 'list'] });
      if (template) {
        reset(valuesOf(saved));
        setStatus('Saved');
      } else {
        await navigate(`../${saved.id}`, { relative: 'path', replace: true });
      }
    },
    onError: (error) => showFieldErrors(setError, error, FIELDS),
  });

  const duplicate = useMutation({
    mutationFn: (id: string) => unwrap(client.POST('/templates/{id}/duplicate', { params: { path: { id } } })),
    onSuccess: async (copy) => {
      await queryClient.invalidateQueries({ queryKey: [...templateKeys.all(project.id), 'list'] });
      await navigate(`../${copy.id}`, { relative: 'path' });
    },
  });

  const remove = useMutation({
    mutationFn: (id: string) => unwrap(client.DELETE('/templates/{id}', { params: { path: { id } } })),
    onSuccess: async () => {
      setConfirmingDelete(false);
      await queryClient.invalidateQueries({ queryKey: [...templateKeys.all(project.id), 'list'] });
      await navigate('..', { relative: 'path' });
    },
    onError: () => setConfirmingDelete(false),
  });

  const title = template ? template.name : 'New template';
  const errors = formState.errors;
  const variables = preview.data?.variables ?? [];

  return (
    <div className="page template-page">
      <PageTitle parts={[title, 'Templates', project.name]} />
      <header className="page-header templates-header">
        <div>
          <p className="breadcrumb">
            <Link to=".." relative="path">
              Templates
            </Link>
          </p>
          <h1>{title}</h1>
          {template ? <p className="muted">Last changed {formatDateTime(template.updatedAt)}</p> : <p className="muted">Not saved yet.</p>}
        </div>
        <div className="form-actions template-actions">
          {template ? (
            <>
              <button type="button" className="button" onClick={() => setSendingTest(true)}>
                Send test
              </button>
              <button
                type="button"
                className="button"
                onClick={() => duplicate.mutate(template.id)}
                disabled={duplicate.isPending}
                aria-busy={duplicate.isPending || undefined}
              >
                Duplicate
              </button>
              <button type="button" className="button button-quiet" onClick={() => setConfirmingDelete(true)}>
                Delete
              </button>
            </>
          ) : null}
          <button type="submit" form={formId} className="button button-primary" disabled={save.isPending} aria-busy={save.isPending || undefined}>
            Save
          </button>
        </div>
      </header>
      <p role="status" className="template-status">
        {status && !formState.isDirty ? status : formState.isDirty && template ? 'Unsaved changes' : ''}
      </p>
      {save.error ? <ErrorNotice error={save.error} title="Not saved" /> : null}
      {duplicate.error ? <ErrorNotice error={duplicate.error} title="Not duplicated" /> : null}
      {remove.error ? <ErrorNotice error={remove.error} title="Not deleted" /> : null}

      <form
        id={formId}
        className="template-form"
        noValidate
        onSubmit={(event) => {
          setStatus('');
          void handleSubmit((values) => save.mutate(values))(event);
        }}
      >
        <section className="card" aria-labelledby={`${formId}-details`}>
          <h2 id={`${formId}-details`}>Details</h2>
          <div className="template-fields">
            <TextField label="Name" autoComplete="off" error={errors.name?.message} {...register('name')} />
            <SelectField
              label="Type"
              options={Object.entries(TYPE_LABELS).map(([value, label]) => ({ value, label }))}
              error={errors.type?.message}
              {...register('type')}
            />
            <TextField className="template-field-wide" label="Subject" autoComplete="off" error={errors.subject?.message} {...register('subject')} />
            <TextField label="From" type="email" autoComplete="off" hint="At a verified domain." error={errors.from?.message} {...register('from')} />
            <TextField label="From name" autoComplete="off" error={errors.fromName?.message} {...register('fromName')} />
            <TextField label="Reply to" type="email" autoComplete="off" error={errors.replyTo?.message} {...register('replyTo')} />
            <TextField label="Description" autoComplete="off" error={errors.description?.message} {...register('description')} />
          </div>
          <p className="field-hint">{TYPE_HINTS[type]}</p>
        </section>

        <div className="template-workspace">
          <section className="card template-body" aria-labelledby={`${formId}-content`}>
            <h2 id={`${formId}-content`} className="visually-hidden">
              Content
            </h2>
            <div className="field">
              <label id={bodyLabelId} onClick={() => editor.current?.focus()}>
                Body
              </label>
              <p id={bodyHintId} className="field-hint">
                HTML (or MJML starting with &lt;mjml&gt;) with Handlebars variables: {'{{firstName}}'}, {'{{firstName ?? "friend"}}'}, {'{{unsubscribeUrl}}'}.
                Tab indents; press Esc then Tab to leave the editor.
              </p>
              <Controller
                control={control}
                name="body"
                render={({ field }) => (
                  <HtmlEditor
                    labelledBy={bodyLabelId}
                    describedBy={[bodyHintId, errors.body ? bodyErrorId : null].filter(Boolean).join(' ')}
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
                <p id={bodyErrorId} className="field-error">
                  {errors.body.message}
                </p>
              ) : null}
            </div>
          </section>

          <section className="card template-preview" aria-labelledby={`${formId}-preview`} aria-busy={preview.isFetching || undefined}>
            <div className="card-header">
              <h2 id={`${formId}-preview`}>Preview</h2>
              {preview.isFetching ? <span className="muted">Updating…</span> : null}
            </div>
            <ContactPicker picked={contact} onPick={setContact} />
            {preview.isError ? <ErrorNotice error={preview.error} title="The template does not render" /> : null}
            {preview.data ? (
              <>
                <p className="preview-subject">
                  <span className="muted">Subject:</span> {preview.data.subject || <span className="muted">(empty)</span>}
                </p>
                <MailPreview html={preview.data.html} title="Preview of the template" className="template-mail-preview" />
                <p className="field-hint">As the contact gets it, without the open pixel and with links to their targets: looking here records nothing.</p>
              </>
            ) : preview.isPending ? (
              <Loading label="Rendering the preview…" />
            ) : null}
            <h3 id={`${formId}-variables`}>Variables</h3>
            {variables.length === 0 ? (
              <p className="muted">No variables used.</p>
            ) : (
              <ul className="variable-list" aria-labelledby={`${formId}-variables`}>
                {variables.map((name) => (
                  <li key={name}>
                    <code>{name}</code>
                  </li>
                ))}
              </ul>
            )}
          </section>
        </div>
      </form>

      {template ? <TemplateUsage template={template} /> : null}

      {template ? (
        <>
          <SendTestDialog
            open={sendingTest}
            template={template}
            defaultEmail={me.data?.email ?? ''}
            unsaved={formState.isDirty}
            onSent={setStatus}
            onClose={() => setSendingTest(false)}
          />
          <ConfirmDialog
            open={confirmingDelete}
            title={`Delete ${template.name}?`}
            confirmLabel="Delete template"
            busy={remove.isPending}
            onConfirm={() => remove.mutate(template.id)}
            onCancel={() => setConfirmingDelete(false)}
          >
            <p>The template is gone for good; mail already sent from it stays in Emails. A template that workflow steps use cannot be deleted.</p>
          </ConfirmDialog>
        </>
      ) : null}
    </div>
  );
}

/** Where the template is used (GET /templates/:id/usage): the workflows whose Send email steps send it. */
function TemplateUsage({ template }: { template: Template }) {
  const { project, client } = useCurrentProject();
  const usage = useQuery({
    queryKey: templateKeys.usage(project.id, template.id),
    queryFn: () => unwrap(client.GET('/templates/{id}/usage', { params: { path: { id: template.id } } })),
  });
  return (
    <section className="card" aria-labelledby="template-usage-heading">
      <h2 id="template-usage-heading">Where used</h2>
      {usage.isPending ? (
        <Loading />
      ) : usage.isError ? (
        <ErrorNotice error={usage.error} />
      ) : usage.data.workflowSteps.length === 0 && usage.data.campaigns.length === 0 ? (
        <p className="empty">Not used by any workflow. Send it with POST /v1/send and {`"template": "${template.id}"`}.</p>
      ) : (
        <div className="table-wrap" role="region" aria-labelledby="template-usage-heading" tabIndex={0}>
          <table className="table">
            <thead>
              <tr>
                <th scope="col">Used by</th>
                <th scope="col">Step</th>
                <th scope="col">Status</th>
              </tr>
            </thead>
            <tbody>
              {usage.data.workflowSteps.map((step) => (
                <tr key={step.id}>
                  <td>
                    <Link to={`../../workflows/${step.workflowId}`} relative="path">
                      {step.workflowName}
                    </Link>
                  </td>
                  <td>{step.name}</td>
                  <td>
                    <span className={step.enabled ? 'badge badge-success' : 'badge'}>{step.enabled ? 'Enabled' : 'Disabled'}</span>
                  </td>
                </tr>
              ))}
              {usage.data.campaigns.map((campaign) => (
                <tr key={campaign.id}>
                  <td>
                    <Link to={`../../campaigns/${campaign.id}`} relative="path">
                      {campaign.name}
                    </Link>
                  </td>
                  <td>Campaign</td>
                  <td />
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
