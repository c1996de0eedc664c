import type { EntityManager } from '@mikro-orm/postgresql';
import { textArrayLiteral } from '../sql/textArrayLiteral';

/** One accepted recipient of a received message, and the projects that receive its copies. */
export interface InboundRecipient {
  /** As the client wrote it in RCPT TO, or as the provider listed it (the domain lower-cased). */
  address: string;
  projectIds: string[];
  /** Addressed to `<RETURN_PATH_SUBDOMAIN>.<verified domain>`: bounces of our own mail (the DSN helper reads it). */
  returnPath: boolean;
}

/** A provider's verdicts on a message it received (SES: `pass`, `fail`, `gray`, `processing_failed`), lower-cased. */
export interface ProviderVerdicts {
  spf?: string;
  dkim?: string;
  dmarc?: string;
  spam?: string;
  virus?: string;
}

/** A message a provider received and handed over (an SES receipt notification), rather than our listener. */
export interface ProviderReceipt {
  name: 'ses';
  /** The provider's id of the message: one message however often it is handed over (unique among stored messages). */
  messageId: string;
  verdicts: ProviderVerdicts;
}

/** What the SMTP conversation said about a message, kept with it. */
export interface InboundEnvelope {
  /** MAIL FROM; empty for the null sender `<>`. */
  mailFrom: string;
  recipients: InboundRecipient[];
  /** The client's address and HELO; empty for a provider's message (the provider saw the connection). */
  remoteAddress: string;
  helo: string;
  provider?: ProviderReceipt;
}

export interface NewInboundMessage {
  id: string;
  raw: Buffer;
  envelope: InboundEnvelope;
  workflowId: string;
}

export interface InboundMessageRow {
  id: string;
  receivedAt: Date;
  /** Null once retention removed it. */
  raw: Buffer | null;
  envelope: InboundEnvelope;
  status: 'RECEIVED' | 'PROCESSED';
}

/** A group of accepted messages whose processing workflow may never have started (the sweep). */
export interface UnprocessedGroup {
  workflowId: string;
  /** The project the workflow is filed under (its ProjectId search attribute). */
  projectId: string;
  messageIds: string[];
}

const toEnvelope = (value: unknown): InboundEnvelope => (typeof value === 'string' ? JSON.parse(value) : value) as InboundEnvelope;

/** Messages taken by the inbound listener or handed over by a provider (contract 20), from their storing until processed. */
export const inboundMessageRepository = {
  /**
   * Stores a round of accepted messages in one statement; the caller commits before answering 250.
   * A provider's message stored already (the same provider message id: a notice delivered again,
   * perhaps at the same time, perhaps twice in this round) is not stored again: the answer maps
   * such a message's id to the id of the one stored. A concurrent insert of the same provider
   * message makes this one wait for it to commit, so the stored one is always found.
   */
  async insertMany(em: EntityManager, messages: NewInboundMessage[]): Promise<Map<string, string>> {
    const duplicates = new Map<string, string>();
    if (!messages.length) return duplicates;
    const values = messages.map(() => '(?, ?, ?, ?::jsonb, ?, ?, ?)').join(', ');
    const params: unknown[] = [];
    for (const m of messages) {
      const provider = m.envelope.provider;
      params.push(m.id, m.raw, m.raw.length, JSON.stringify(m.envelope), m.workflowId, provider?.name ?? null, provider?.messageId ?? null);
    }
    const inserted = await em.execute<Array<{ id: string }>>(
      `insert into inbound_messages (id, raw, size, envelope, workflow_id, provider, provider_message_id) values ${values}
       on conflict (provider, provider_message_id) where provider_message_id is not null do nothing
       returning id`,
      params,
    );
    if (inserted.length === messages.length) return duplicates;
    const insertedIds = new Set(inserted.map((r) => r.id));
    const skipped = messages.filter((m) => !insertedIds.has(m.id));
    const stored = await em.execute<Array<{ id: string; provider: string; provider_message_id: string }>>(
      `select id, provider, provider_message_id from inbound_messages where provider_message_id = any(?::text[])`,
      [textArrayLiteral(skipped.map((m) => m.envelope.provider!.messageId))],
    );
    const storedId = new Map(stored.map((r) => [`${r.provider}\n${r.provider_message_id}`, r.id]));
    for (const m of skipped) {
      const id = storedId.get(`${m.envelope.provider!.name}\n${m.envelope.provider!.messageId}`);
      // Only the unique provider message id makes an insert do nothing, and its row is visible now.
      if (!id) throw new Error(`inbound message ${m.id} was neither stored nor found stored`);
      duplicates.set(m.id, id);
    }
    return duplicates;
  },

  async findById(em: EntityManager, id: string): Promise<InboundMessageRow | null> {
    const rows = await em.execute(`select id, received_at, raw, envelope, status from inbound_messages where id = ?`, [id]);
    if (!rows.length) return null;
    const r = rows[0];
    return { id: r.id, receivedAt: new Date(r.received_at), raw: r.raw ?? null, envelope: toEnvelope(r.envelope), status: r.status };
  },

  /** The raw bytes alone (GET /emails/:id/raw and the content of a received email). */
  async raw(em: EntityManager, id: string): Promise<Buffer | null> {
    const rows = await em.execute(`select raw from inbound_messages where id = ?`, [id]);
    return rows.length ? (rows[0].raw ?? null) : null;
  },

  async markProcessed(em: EntityManager, ids: string[]): Promise<void> {
    if (!ids.length) return;
    await em.execute(`update inbound_messages set status = 'PROCESSED', processed_at = now() where id = any(?::uuid[]) and status = 'RECEIVED'`, [
      `{${ids.join(',')}}`,
    ]);
  },

  /**
   * Removes the raw content of processed messages received more than `days` ago, at most `limit`
   * (INBOUND_RETENTION_DAYS): their email records stay, without text, HTML or attachments.
   */
  async clearContentOlderThan(em: EntityManager, days: number, limit: number): Promise<number> {
    const rows = await em.execute<Array<{ n: number }>>(
      `with old as (
         select id from inbound_messages
         where raw is not null and status = 'PROCESSED' and received_at < now() - make_interval(days => ?)
         order by received_at limit ?
       ), cleared as (update inbound_messages m set raw = null from old where m.id = old.id returning 1)
       select count(*)::int as n from cleared`,
      [days, limit],
    );
    return rows[0].n;
  },

  /** Messages accepted more than `olderThanSeconds` ago and not processed, by the workflow they were given. */
  async findUnprocessed(em: EntityManager, olderThanSeconds: number, limit: number): Promise<UnprocessedGroup[]> {
    const rows = await em.execute<Array<{ id: string; workflow_id: string; project_id: string }>>(
      `select id, workflow_id, envelope->'recipients'->0->'projectIds'->>0 as project_id from inbound_messages
       where status = 'RECEIVED' and received_at < now() - make_interval(secs => ?)
       order by received_at limit ?`,
      [olderThanSeconds, limit],
    );
    const groups = new Map<string, UnprocessedGroup>();
    for (const r of rows) {
      const group = groups.get(r.workflow_id) ?? { workflowId: r.workflow_id, projectId: r.project_id, messageIds: [] };
      group.messageIds.push(r.id);
      groups.set(r.workflow_id, group);
    }
    return [...groups.values()];
  },
};
