import { useId, useState } from 'react';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { unwrap } from '../api/client';
import { queryKeys } from '../api/queries';
import { useCurrentProject } from '../projects/currentProject';
import { MailPreview } from '../components/MailPreview';
import { ErrorNotice } from '../components/ErrorNotice';
import type { CampaignType } from './campaignData';

/**
 * The campaign's mail as a chosen contact would get it: POST /templates/preview renders the
 * subject and body as sending does (Handlebars, MJML, the footer of MARKETING mail) with that
 * contact's data, made for looking: no open pixel, links pointing at their targets (contract 21,
 * "looking is not opening"). Shown only in the sandboxed frame (components/MailPreview).
 */
export function BodyPreview({ subject, body, type }: { subject: string; body: string; type: CampaignType }) {
  const { project, client } = useCurrentProject();
  const contactSelectId = useId();
  const [contactId, setContactId] = useState<string | null>(null);
  const contacts = useQuery({
    queryKey: [...queryKeys.project(project.id), 'campaigns', 'preview-contacts'],
    queryFn: () => unwrap(client.GET('/contacts', { params: { query: { limit: 20 } } })),
  });
  // Until one is chosen, the first contact's data fills it (the mail as somebody real would get it).
  const chosen = contactId ?? contacts.data?.data[0]?.id ?? '';
  const ready = body.trim() !== '' && !contacts.isPending;
  const rendered = useQuery({
    queryKey: [...queryKeys.project(project.id), 'campaigns', 'preview', { subject, body, type, chosen }],
    queryFn: () => unwrap(client.POST('/templates/preview', { body: { subject, body, type, ...(chosen ? { contactId: chosen } : {}) } })),
    enabled: ready,
    placeholderData: keepPreviousData,
    staleTime: 60_000,
  });

  return (
    <div className="body-preview">
      {contacts.data && contacts.data.data.length > 0 ? (
        <div className="field field-inline preview-as">
          <label htmlFor={contactSelectId}>Preview as</label>
          <select id={contactSelectId} value={chosen} onChange={(event) => setContactId(event.target.value)}>
            <option value="">No contact (variables empty)</option>
            {contacts.data.data.map((contact) => (
              <option key={contact.id} value={contact.id}>
                {contact.email}
              </option>
            ))}
          </select>
        </div>
      ) : null}
      {!body.trim() ? (
        <p className="empty">Write the body to see it here.</p>
      ) : rendered.isError ? (
        <ErrorNotice error={rendered.error} title="The mail cannot be rendered" />
      ) : !rendered.data ? (
        <p className="muted">Rendering…</p>
      ) : (
        <>
          <p className="body-preview-subject">
            <span className="muted">Subject:</span> {rendered.data.subject.trim() || <span className="muted">(no subject yet)</span>}
          </p>
          <MailPreview html={rendered.data.html} title="Preview of the campaign’s mail" className="campaign-mail-preview" />
          {rendered.data.variables.length > 0 ? (
            <p className="field-hint">Variables: {rendered.data.variables.map((name, i) => [i > 0 ? ', ' : '', <code key={name}>{name}</code>])}</p>
          ) : null}
        </>
      )}
    </div>
  );
}
