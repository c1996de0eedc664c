import { useId, useState } from 'react';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { unwrap } from '../api/client';
import { useCurrentProject } from '../projects/currentProject';
import { ErrorNotice } from '../components/ErrorNotice';
import { templateKeys } from './templatesApi';
import { useDebounced } from './useDebounced';

export interface PickedContact {
  id: string;
  email: string;
}

/**
 * Whose data fills the preview: a search over the project's contacts by address (GET /contacts'
 * search), its matches as buttons; the chosen contact is shown with a way back to no contact.
 */
export function ContactPicker({ picked, onPick }: { picked: PickedContact | null; onPick: (contact: PickedContact | null) => void }) {
  const { project, client } = useCurrentProject();
  const [search, setSearch] = useState('');
  const term = useDebounced(search.trim(), 250);
  const searchId = useId();
  const resultsId = useId();
  const contacts = useQuery({
    queryKey: templateKeys.contacts(project.id, term),
    queryFn: ({ signal }) => unwrap(client.GET('/contacts', { params: { query: { limit: 6, ...(term ? { search: term } : {}) } }, signal })),
    enabled: picked === null && term.length > 0,
    placeholderData: keepPreviousData,
  });

  if (picked) {
    return (
      <div className="contact-picked">
        <p>
          <span className="muted">Previewing as</span> <strong>{picked.email}</strong>
        </p>
        <button type="button" className="button button-small" onClick={() => onPick(null)}>
          Preview without a contact
        </button>
      </div>
    );
  }
  const matches = contacts.data?.data ?? [];
  return (
    <div className="contact-picker">
      <div className="field">
        <label htmlFor={searchId}>Preview contact</label>
        <input
          id={searchId}
          type="search"
          autoComplete="off"
          placeholder="Search contacts by email"
          value={search}
          onChange={(event) => setSearch(event.target.value)}
          aria-describedby={resultsId}
        />
      </div>
      <div id={resultsId} aria-live="polite">
        {term.length === 0 ? (
          <p className="field-hint">Without a contact, variables render empty (or as their fallback).</p>
        ) : contacts.isError ? (
          <ErrorNotice error={contacts.error} />
        ) : contacts.isPending ? null : matches.length === 0 ? (
          <p className="field-hint">No contact matches “{term}”.</p>
        ) : (
          <ul className="contact-results" aria-label="Matching contacts">
            {matches.map((contact) => (
              <li key={contact.id}>
                <button type="button" className="button button-small button-quiet" onClick={() => onPick({ id: contact.id, email: contact.email })}>
                  {contact.email}
                </button>
              </li>
            ))}
          </ul>
        )}
      </div>
    </div>
  );
}
