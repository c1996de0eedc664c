import crypto from 'node:crypto';
import type { TestStack } from './testStack';

/**
 * Emails as the send pipeline leaves them (a contact and an email row, status SENT by default),
 * written straight into the stack's database, for tests of what happens after sending.
 */
export interface EmailFixture {
  emailId: string;
  contactId: string;
  projectId: string;
  email: string;
  messageId: string;
  providerMessageId: string;
}

export async function insertContact(stack: TestStack, projectId: string, options: { email?: string; subscribed?: boolean } = {}) {
  const email = options.email ?? `reader-${crypto.randomBytes(4).toString('hex')}@example.com`;
  const [row] = await stack.orm.em.fork().execute(
    `insert into contacts (project_id, email, subscribed, data) values (?, ?, ?, '{}'::jsonb)
     on conflict (project_id, email) do update set subscribed = excluded.subscribed returning id`,
    [projectId, email, options.subscribed ?? true],
  );
  return { contactId: row.id as string, email };
}

export async function insertSentEmail(
  stack: TestStack,
  projectId: string,
  options: { email?: string; status?: string; subscribed?: boolean; subject?: string } = {},
): Promise<EmailFixture> {
  // Contacts are stored lower-cased; the email keeps the address as the sender wrote it.
  const { contactId } = await insertContact(stack, projectId, { ...options, email: options.email?.trim().toLowerCase() });
  const email = options.email ?? (await stack.orm.em.fork().execute(`select email from contacts where id = ?`, [contactId]))[0].email;
  const emailId = crypto.randomUUID();
  const messageId = `<${emailId}@mail.example.com>`;
  const providerMessageId = `0100018c${crypto.randomBytes(12).toString('hex')}-${crypto.randomUUID()}-000000`;
  await stack.orm.em.fork().execute(
    `insert into emails (id, project_id, contact_id, source, type, subject, from_address, to_address, html, status, message_id, provider_message_id, sent_at)
     values (?, ?, ?, 'TRANSACTIONAL', 'MARKETING', ?, 'news@mail.example.com', ?, '<p>Hello</p>', ?, ?, ?, now())`,
    [emailId, projectId, contactId, options.subject ?? 'Hello there', email, options.status ?? 'SENT', messageId, providerMessageId],
  );
  return { emailId, contactId, projectId, email, messageId, providerMessageId };
}

export async function emailRow(stack: TestStack, emailId: string): Promise<Record<string, any>> {
  const [row] = await stack.orm.em.fork().execute(`select * from emails where id = ?`, [emailId]);
  return row;
}

/** The events recorded for an email or contact, in the order they were written. */
export async function eventsOf(stack: TestStack, where: { emailId?: string; contactId?: string }): Promise<Array<Record<string, any>>> {
  return stack.orm.em
    .fork()
    .execute(
      where.emailId
        ? `select name, data, source, email_id, contact_id from events where email_id = ? order by seq`
        : `select name, data, source, email_id, contact_id from events where contact_id = ? order by seq`,
      [where.emailId ?? where.contactId],
    );
}

export async function contactSubscribed(stack: TestStack, contactId: string): Promise<boolean | null> {
  const [row] = await stack.orm.em.fork().execute(`select subscribed from contacts where id = ?`, [contactId]);
  return row ? row.subscribed : null;
}

export async function suppressions(stack: TestStack, projectId: string): Promise<Array<Record<string, any>>> {
  return stack.orm.em.fork().execute(`select email, reason, email_id, detail from email_suppressions where project_id = ? order by email`, [projectId]);
}
