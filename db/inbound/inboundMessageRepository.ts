import type { EntityManager } from '@mikro-orm/postgresql';

/** One accepted recipient of a received message, and the projects that receive its copies. */
export interface InboundRecipient {
  /** As the client wrote it in RCPT TO (the domain lower-cased). */
  address: string;
  projectIds: string[];
  /** Addressed to `<RETURN_PATH_SUBDOMAIN>.<verified domain>`: bounces of our own mail (the DSN helper reads it). */
  returnPath: boolean;
}

/** What the SMTP conversation said about a message, kept with it. */
export interface InboundEnvelope {
  /** MAIL FROM; empty for the null sender `<>`. */
  mailFrom: string;
  recipients: InboundRecipient[];
  remoteAddress: string;
  helo: string;
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

/** Messages taken by the inbound listener (contract 20), from the 250 to DATA until processed. */
export const inboundMessageRepository = {
  /** Stores a round of accepted messages in one statement; the caller commits before answering 250. */
  async insertMany(em: EntityManager, messages: NewInboundMessage[]): Promise<void> {
    if (!messages.length) return;
    const values = messages.map(() => '(?, ?, ?, ?::jsonb, ?)').join(', ');
    const params: unknown[] = [];
    for (const m of messages) params.push(m.id, m.raw, m.raw.length, JSON.stringify(m.envelope), m.workflowId);
    await em.execute(`insert into inbound_messages (id, raw, size, envelope, workflow_id) values ${values}`, params);
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
