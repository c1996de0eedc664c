import { useMutation, useQueryClient } from '@tanstack/react-query';
import { Link, useNavigate } from 'react-router';
import { unwrap } from '../api/client';
import { queryKeys } from '../api/queries';
import { useCurrentProject } from '../projects/currentProject';
import { PageTitle } from '../components/PageTitle';
import { ContactForm, type ContactBody } from './ContactForm';
import { contactKeys } from './contactsApi';
import './contacts.css';

/** /contacts/new: a contact by hand (POST /contacts; an address that has a contact already updates it, and the page says so). */
export function NewContactPage() {
  const { project, client } = useCurrentProject();
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const base = `/projects/${project.id}/contacts`;
  const create = useMutation({
    mutationFn: (body: ContactBody) => unwrap(client.POST('/contacts', { body })),
    onSuccess: async (contact) => {
      queryClient.setQueryData(contactKeys.one(project.id, contact.id), contact);
      await Promise.all([
        queryClient.invalidateQueries({ queryKey: contactKeys.all(project.id) }),
        queryClient.invalidateQueries({ queryKey: queryKeys.setupState(project.id) }),
      ]);
      await navigate(`${base}/${contact.id}`, { state: { notice: contact._meta.isNew ? 'created' : 'merged' } });
    },
  });
  return (
    <div className="page">
      <PageTitle parts={['New contact', 'Contacts', project.name]} />
      <nav aria-label="Breadcrumb" className="breadcrumb">
        <Link to={base}>Contacts</Link>
      </nav>
      <header className="page-header">
        <h1>New contact</h1>
        <p className="muted">A contact is one address of your audience, with the data your templates and segments use.</p>
      </header>
      <section className="card narrow-card" aria-label="Contact">
        <ContactForm
          defaultValues={{ email: '', subscribed: true, data: [] }}
          submitLabel="Create contact"
          busy={create.isPending}
          error={create.error}
          onSubmit={(body) => create.mutate(body)}
          onCancel={() => void navigate(base)}
        />
      </section>
    </div>
  );
}
