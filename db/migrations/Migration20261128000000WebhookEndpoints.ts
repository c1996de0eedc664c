import { Migration } from '@mikro-orm/migrations';

/**
 * Outbound webhooks (contract 18): a project's endpoints, and one message per (event, endpoint)
 * with its delivery state.
 *
 * The fan-out is a statement-level trigger on `events`: whichever path records an event (tracking,
 * sends, feedback, subscription changes, segments, mail in, imports, automations), the messages for
 * the endpoints whose patterns match are inserted by the same statement, so they commit or roll back
 * with the event (a transactional outbox). The payload is built then (the contact's address and the
 * email's subject as they were), so every retry sends the same body even after the contact is
 * deleted. A project without an enabled endpoint pays one index probe per statement.
 *
 * Delivery state lives here, not in Temporal history: `next_attempt_at` is when a PENDING message is
 * due, and `leased_until` holds it while an attempt is under way (a killed worker's attempts come
 * due again when it passes). Each insert notifies `mailroom_webhook_due` with `<endpoint id>:<project id>`, which the
 * worker listens to to wake the endpoint's delivery workflow (services/webhooks/webhookWakeups.ts).
 */
export class Migration20261128000000WebhookEndpoints extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table webhook_endpoints (
        id uuid primary key default gen_random_uuid(),
        project_id uuid not null references projects (id) on delete cascade,
        url text not null,
        events text[] not null,
        description text,
        enabled boolean not null default true,
        disabled_reason text,
        -- Sealed with SECRET (lib/crypto.ts): the key signs every message, so it is kept, never shown again.
        secret_sealed text not null,
        secret_hint text not null,
        -- The secret before the last rotation, which still signs (beside the new one) until it expires.
        previous_secret_sealed text,
        previous_secret_expires_at timestamptz,
        -- Since when every attempt has failed (null after a success): WEBHOOK_DISABLE_AFTER_HOURS counts from here.
        failing_since timestamptz,
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now()
      );
      create index webhook_endpoints_project_index on webhook_endpoints (project_id, created_at, id);

      create table webhook_messages (
        id uuid primary key default gen_random_uuid(),
        endpoint_id uuid not null references webhook_endpoints (id) on delete cascade,
        project_id uuid not null,
        -- No foreign key: the message outlives its event (a deleted contact takes its events along).
        event_id uuid,
        event_type text not null,
        payload jsonb not null,
        status text not null default 'PENDING' check (status in ('PENDING', 'SUCCEEDED', 'FAILED')),
        attempt_count integer not null default 0,
        -- [{ at, statusCode, durationMs, error }], oldest first.
        attempts jsonb not null default '[]'::jsonb,
        next_attempt_at timestamptz,
        -- While an attempt runs: when it is given up for lost (a killed worker) and the message due again.
        -- In no index, so a claim is a HOT update (fillfactor leaves room on each page for it).
        leased_until timestamptz,
        created_at timestamptz not null default now()
      ) with (fillfactor = 80);
      create index webhook_messages_due_index on webhook_messages (endpoint_id, next_attempt_at) where status = 'PENDING';
      create index webhook_messages_endpoint_created_index on webhook_messages (endpoint_id, created_at desc, id desc);
      -- Retention only (oldest first, hourly): rows are inserted in time order, so a block range index does.
      create index webhook_messages_created_index on webhook_messages using brin (created_at);

      -- An event name matches a pattern when the pattern is '*', the name itself, or a prefix ending in '.*'.
      create function mailroom_webhook_pattern_matches(patterns text[], name text) returns boolean
        language sql immutable parallel safe as $fn$
          select exists (
            select 1 from unnest(patterns) p
            where p = '*' or p = name or (right(p, 2) = '.*' and starts_with(name, left(p, -1)))
          )
        $fn$;

      create function mailroom_webhook_iso(t timestamptz) returns text language sql immutable parallel safe as $fn$
        select to_char(t at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
      $fn$;

      create function webhook_messages_for_events() returns trigger language plpgsql as $fn$
      begin
        if not exists (
          select 1 from webhook_endpoints e
          where e.enabled and e.project_id in (select distinct n.project_id from new_rows n)
        ) then
          return null;
        end if;
        insert into webhook_messages (endpoint_id, project_id, event_id, event_type, payload, next_attempt_at)
        select e.id, n.project_id, n.id, n.name,
          jsonb_build_object(
            'type', n.name,
            'timestamp', mailroom_webhook_iso(n.created_at),
            'source', case n.source when 'SYSTEM' then 'system' else 'tracked' end,
            'data', jsonb_build_object(
              'event', jsonb_build_object('id', n.id, 'name', n.name, 'createdAt', mailroom_webhook_iso(n.created_at), 'data', n.data),
              'contact', case when c.id is null then null else jsonb_build_object('id', c.id, 'email', c.email) end
            ) || case when starts_with(n.name, 'email.') then jsonb_build_object(
              'email', case when m.id is null then null
                else jsonb_build_object('id', m.id, 'subject', m.subject, 'campaignId', m.campaign_id, 'templateId', m.template_id) end
            ) else '{}'::jsonb end
          ),
          now()
        from new_rows n
        join webhook_endpoints e on e.project_id = n.project_id and e.enabled and mailroom_webhook_pattern_matches(e.events, n.name)
        left join contacts c on c.id = n.contact_id
        left join emails m on m.id = n.email_id and starts_with(n.name, 'email.');
        return null;
      end $fn$;
      create trigger webhook_messages_for_events after insert on events
        referencing new table as new_rows for each statement execute function webhook_messages_for_events();

      -- Wakes the endpoints' delivery (the worker LISTENs); sent at commit, once per distinct payload.
      create function webhook_messages_notify_due() returns trigger language plpgsql as $fn$
      declare
        target text;
      begin
        for target in select distinct endpoint_id::text || ':' || project_id::text from new_rows loop
          perform pg_notify('mailroom_webhook_due', target);
        end loop;
        return null;
      end $fn$;
      create trigger webhook_messages_notify_due after insert on webhook_messages
        referencing new table as new_rows for each statement execute function webhook_messages_notify_due();
    `);
  }

  override async down(): Promise<void> {
    this.addSql(`
      drop trigger if exists webhook_messages_for_events on events;
      drop function if exists webhook_messages_for_events();
      drop table if exists webhook_messages;
      drop function if exists webhook_messages_notify_due();
      drop table if exists webhook_endpoints;
      drop function if exists mailroom_webhook_pattern_matches(text[], text);
      drop function if exists mailroom_webhook_iso(timestamptz);
    `);
  }
}
