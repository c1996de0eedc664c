import { Migration } from '@mikro-orm/migrations';

/**
 * What the condition compiler (db/conditions/) needs to stay fast on large projects, and the
 * per-project uniqueness of segment slugs (they name the segment.<slug>.entry / .exit events).
 *
 * Two shapes of query read these (see db/conditions/compileCondition.ts):
 * - "set" queries over a whole project (memberCount, /segments/:id/contacts, campaign audiences)
 *   compile `event.<name>` and `email.<kind>` filters to `c.id in (select contact_id ...)`, which
 *   PostgreSQL runs as one hashed subplan or semi-join: they need the matching rows of one
 *   project by name / by timestamp, with contact_id in the index (index-only scans).
 * - "row" queries for one contact or a few (contactMatches, live updates of tracked segments,
 *   the paged recompute) compile them to a correlated `exists (... where contact_id = c.id)`:
 *   events_contact_name_created_index answers those for events, and the existing
 *   emails_contact_created_index (contact_id, created_at) for emails (a contact has few).
 */
export class Migration20261123090000ConditionIndexes extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      -- set queries: event.<name> triggered / triggeredWithin / triggeredOlderThan / notTriggered*.
      create index events_project_name_created_index on events (project_id, name, created_at) include (contact_id);
      -- row queries: the same filters for one contact.
      create index events_contact_name_created_index on events (contact_id, name, created_at);

      -- set queries: email.<kind> filters. Partial, so mail never opened, clicked, bounced or
      -- complained costs nothing in those indexes.
      create index emails_project_sent_index on emails (project_id, sent_at) include (contact_id) where sent_at is not null;
      create index emails_project_delivered_index on emails (project_id, delivered_at) include (contact_id) where delivered_at is not null;
      create index emails_project_opened_index on emails (project_id, opened_at) include (contact_id) where opened_at is not null;
      create index emails_project_clicked_index on emails (project_id, clicked_at) include (contact_id) where clicked_at is not null;
      create index emails_project_bounced_index on emails (project_id, bounced_at) include (contact_id) where bounced_at is not null;
      create index emails_project_complained_index on emails (project_id, complained_at) include (contact_id) where complained_at is not null;

      -- Usage lists and DELETE /segments/:id look up campaigns by audience (FILTERED, active).
      create index campaigns_project_filtered_index on campaigns (project_id) where audience_type = 'FILTERED';

      create unique index segments_project_slug_unique on segments (project_id, slug);

      -- Typed reads of contact data for comparisons: null (never an error) when the value is not
      -- a number / an ISO 8601 date, so that no stored value can make a segment query fail.
      create function mailroom_jsonb_numeric(v jsonb) returns numeric
        language plpgsql immutable parallel safe as $$
        begin
          if v is null then return null; end if;
          if jsonb_typeof(v) = 'number' then return v::numeric; end if;
          if jsonb_typeof(v) = 'string' and (v #>> '{}') ~ '^\\s*[-+]{0,1}([0-9]+([.][0-9]*){0,1}|[.][0-9]+)([eE][-+]{0,1}[0-9]+){0,1}\\s*$' then
            return (v #>> '{}')::numeric;
          end if;
          return null;
        exception when others then
          return null;
        end $$;

      -- Date-times without an offset are read as UTC.
      create function mailroom_jsonb_timestamptz(v jsonb) returns timestamptz
        language plpgsql immutable parallel safe as $$
        declare s text;
        begin
          if v is null or jsonb_typeof(v) <> 'string' then return null; end if;
          s := v #>> '{}';
          if s !~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}([T ][0-9]{2}:[0-9]{2}(:[0-9]{2}([.][0-9]+){0,1}){0,1}(Z|z|[+-][0-9]{2}(:{0,1}[0-9]{2}){0,1}){0,1}){0,1}$' then
            return null;
          end if;
          if s ~ '(Z|z|[+-][0-9]{2}(:{0,1}[0-9]{2}){0,1})$' and length(s) > 10 then
            return s::timestamptz;
          end if;
          return (s::timestamp) at time zone 'UTC';
        exception when others then
          return null;
        end $$;
    `);
  }

  override async down(): Promise<void> {
    this.addSql(`
      drop function if exists mailroom_jsonb_timestamptz(jsonb);
      drop function if exists mailroom_jsonb_numeric(jsonb);
      drop index if exists segments_project_slug_unique;
      drop index if exists campaigns_project_filtered_index;
      drop index if exists emails_project_complained_index;
      drop index if exists emails_project_bounced_index;
      drop index if exists emails_project_clicked_index;
      drop index if exists emails_project_opened_index;
      drop index if exists emails_project_delivered_index;
      drop index if exists emails_project_sent_index;
      drop index if exists events_contact_name_created_index;
      drop index if exists events_project_name_created_index;
    `);
  }
}
