import type { EntityManager } from '@mikro-orm/postgresql';
import { dateOrNull, queryRows, type TimestampText } from '../sql/rows';

/** A project's outbound webhook endpoint (contract 18), with its secrets still sealed. */
export interface WebhookEndpointRow {
  id: string;
  projectId: string;
  url: string;
  events: string[];
  description: string | null;
  enabled: boolean;
  disabledReason: string | null;
  secretSealed: string;
  secretHint: string;
  previousSecretSealed: string | null;
  previousSecretExpiresAt: Date | null;
  failingSince: Date | null;
  createdAt: Date;
  updatedAt: Date;
  /** updated_at to the microsecond: a claim that finds another one knows the endpoint changed. */
  version: string;
}

interface EndpointTableRow {
  id: string;
  project_id: string;
  url: string;
  events: string[];
  description: string | null;
  enabled: boolean;
  disabled_reason: string | null;
  secret_sealed: string;
  secret_hint: string;
  previous_secret_sealed: string | null;
  previous_secret_expires_at: TimestampText | null;
  failing_since: TimestampText | null;
  created_at: TimestampText;
  updated_at: TimestampText;
  version: string;
}

const COLUMNS = `id, project_id, url, events, description, enabled, disabled_reason, secret_sealed, secret_hint,
  previous_secret_sealed, previous_secret_expires_at, failing_since, created_at, updated_at, updated_at::text as version`;

const toEndpoint = (r: EndpointTableRow): WebhookEndpointRow => ({
  id: r.id,
  projectId: r.project_id,
  url: r.url,
  events: r.events,
  description: r.description,
  enabled: r.enabled,
  disabledReason: r.disabled_reason,
  secretSealed: r.secret_sealed,
  secretHint: r.secret_hint,
  previousSecretSealed: r.previous_secret_sealed,
  previousSecretExpiresAt: dateOrNull(r.previous_secret_expires_at),
  failingSince: dateOrNull(r.failing_since),
  createdAt: new Date(r.created_at),
  updatedAt: new Date(r.updated_at),
  version: r.version,
});

export interface NewWebhookEndpoint {
  /** Chosen by the caller: the secret is sealed with the endpoint's id as its context. */
  id: string;
  url: string;
  events: string[];
  description: string | null;
  enabled: boolean;
  secretSealed: string;
  secretHint: string;
}

export interface WebhookEndpointChanges {
  url?: string;
  events?: string[];
  description?: string | null;
  enabled?: boolean;
}

/**
 * Endpoints and their state of health. Their messages are in webhookMessageRepository.ts; the
 * trigger that creates messages for recorded events is in the migration
 * Migration20261128000000WebhookEndpoints.
 */
export const webhookEndpointRepository = {
  /**
   * Creates the endpoint unless the project has `max` already (null then). The project's row is
   * locked first, so two creates at once cannot both pass the count.
   */
  async createWithin(em: EntityManager, projectId: string, endpoint: NewWebhookEndpoint, max: number): Promise<WebhookEndpointRow | null> {
    return em.transactional(async (tx) => {
      await tx.execute(`select 1 from projects where id = ? for update`, [projectId]);
      const [row] = await queryRows<EndpointTableRow>(
        tx,
        `insert into webhook_endpoints (id, project_id, url, events, description, enabled, secret_sealed, secret_hint)
         select ?, ?, ?, array(select jsonb_array_elements_text(?::jsonb)), ?, ?, ?, ?
         where (select count(*) from webhook_endpoints where project_id = ?) < ?
         returning ${COLUMNS}`,
        [
          endpoint.id,
          projectId,
          endpoint.url,
          JSON.stringify(endpoint.events),
          endpoint.description,
          endpoint.enabled,
          endpoint.secretSealed,
          endpoint.secretHint,
          projectId,
          max,
        ],
      );
      return row ? toEndpoint(row) : null;
    });
  },

  async list(em: EntityManager, projectId: string): Promise<WebhookEndpointRow[]> {
    const rows = await queryRows<EndpointTableRow>(em, `select ${COLUMNS} from webhook_endpoints where project_id = ? order by created_at, id`, [projectId]);
    return rows.map(toEndpoint);
  },

  async find(em: EntityManager, projectId: string, id: string): Promise<WebhookEndpointRow | null> {
    const [row] = await queryRows<EndpointTableRow>(em, `select ${COLUMNS} from webhook_endpoints where project_id = ? and id = ?`, [projectId, id]);
    return row ? toEndpoint(row) : null;
  },

  /** For delivery, which knows only the id. */
  async findById(em: EntityManager, id: string): Promise<WebhookEndpointRow | null> {
    const [row] = await queryRows<EndpointTableRow>(em, `select ${COLUMNS} from webhook_endpoints where id = ?`, [id]);
    return row ? toEndpoint(row) : null;
  },

  /**
   * Applies the changes. Enabling clears the reason and the failure clock and makes every pending
   * message due now (contract 18: re-enabling sends what is still pending), waking its delivery.
   */
  async update(em: EntityManager, projectId: string, id: string, changes: WebhookEndpointChanges): Promise<WebhookEndpointRow | null> {
    return em.transactional(async (tx) => {
      const [before] = await queryRows<{ enabled: boolean }>(tx, `select enabled from webhook_endpoints where project_id = ? and id = ? for update`, [
        projectId,
        id,
      ]);
      if (!before) return null;
      const sets = ['updated_at = now()'];
      const params: unknown[] = [];
      if (changes.url !== undefined) {
        sets.push('url = ?');
        params.push(changes.url);
      }
      if (changes.events !== undefined) {
        sets.push('events = array(select jsonb_array_elements_text(?::jsonb))');
        params.push(JSON.stringify(changes.events));
      }
      if (changes.description !== undefined) {
        sets.push('description = ?');
        params.push(changes.description);
      }
      const enabling = changes.enabled === true && !before.enabled;
      if (changes.enabled === false) sets.push('enabled = false');
      if (enabling) sets.push('enabled = true', 'disabled_reason = null', 'failing_since = null');
      const [row] = await queryRows<EndpointTableRow>(tx, `update webhook_endpoints set ${sets.join(', ')} where id = ? returning ${COLUMNS}`, [...params, id]);
      if (enabling) {
        await tx.execute(`update webhook_messages set next_attempt_at = now() where endpoint_id = ? and status = 'PENDING'`, [id]);
        await tx.execute(`select pg_notify('mailroom_webhook_due', ?)`, [`${id}:${projectId}`]);
      }
      return toEndpoint(row);
    });
  },

  async remove(em: EntityManager, projectId: string, id: string): Promise<boolean> {
    const rows = await em.execute(`delete from webhook_endpoints where project_id = ? and id = ? returning id`, [projectId, id]);
    return rows.length > 0;
  },

  /** The current secret becomes the previous one, still signing until `previousExpiresAt`. */
  async rotateSecret(
    em: EntityManager,
    projectId: string,
    id: string,
    secret: { sealed: string; hint: string; previousSealed: (current: string) => string; previousExpiresAt: Date },
  ): Promise<WebhookEndpointRow | null> {
    return em.transactional(async (tx) => {
      const [current] = await queryRows<{ secret_sealed: string }>(
        tx,
        `select secret_sealed from webhook_endpoints where project_id = ? and id = ? for update`,
        [projectId, id],
      );
      if (!current) return null;
      const [row] = await queryRows<EndpointTableRow>(
        tx,
        `update webhook_endpoints set secret_sealed = ?, secret_hint = ?, previous_secret_sealed = ?, previous_secret_expires_at = ?, updated_at = now()
         where id = ? returning ${COLUMNS}`,
        [secret.sealed, secret.hint, secret.previousSealed(current.secret_sealed), secret.previousExpiresAt.toISOString(), id],
      );
      return toEndpoint(row);
    });
  },

  /** After a 2xx: the failure clock stops (a write only when it was running). */
  async recordSuccess(em: EntityManager, id: string): Promise<void> {
    await em.execute(`update webhook_endpoints set failing_since = null where id = ? and failing_since is not null`, [id]);
  },

  /**
   * After failed attempts: the failure clock starts if it was not running, and an endpoint whose
   * attempts have all failed for `disableAfterHours` is disabled. Written only when the clock starts
   * or the endpoint is disabled, so a failing endpoint costs no write per attempt. Returns whether
   * it is disabled now, and since when it fails.
   */
  async recordFailure(em: EntityManager, id: string, disableAfterHours: number): Promise<{ disabled: boolean; failingSince: Date | null }> {
    const seconds = disableAfterHours * 3600;
    const [row] = await queryRows<{ enabled: boolean; failing_since: TimestampText }>(
      em,
      `update webhook_endpoints set
         failing_since = coalesce(failing_since, now()),
         enabled = failing_since is null,
         disabled_reason = case when failing_since is null then disabled_reason else 'Every attempt failed for ' || ? || ' hours' end,
         updated_at = case when failing_since is null then updated_at else now() end
       where id = ? and enabled and (failing_since is null or failing_since <= now() - make_interval(secs => ?))
       returning enabled, failing_since`,
      [String(disableAfterHours), id, seconds],
    );
    return row ? { disabled: !row.enabled, failingSince: new Date(row.failing_since) } : { disabled: false, failingSince: null };
  },

  /** 410 Gone: the receiver says the endpoint no longer exists. */
  async disable(em: EntityManager, id: string, reason: string): Promise<void> {
    await em.execute(`update webhook_endpoints set enabled = false, disabled_reason = ?, updated_at = now() where id = ? and enabled`, [reason, id]);
  },

  /** Enabled endpoints with a message due now: what the worker's sweep wakes (a missed notification, a worker restarted). */
  async withDueMessages(em: EntityManager, limit: number): Promise<Array<{ id: string; projectId: string }>> {
    const rows = await queryRows<{ id: string; project_id: string }>(
      em,
      `select e.id, e.project_id from webhook_endpoints e
       where e.enabled and exists (
         select 1 from webhook_messages m
         where m.endpoint_id = e.id and m.status = 'PENDING' and m.next_attempt_at <= now()
           and (m.leased_until is null or m.leased_until <= now())
       )
       limit ?`,
      [limit],
    );
    return rows.map((r) => ({ id: r.id, projectId: r.project_id }));
  },
};
