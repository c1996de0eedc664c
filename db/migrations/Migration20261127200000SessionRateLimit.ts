import { Migration } from '@mikro-orm/migrations';

/**
 * Contract 4: requests a dashboard session makes (cookie + `X-Project-Id`) count against a budget
 * of their own per user (SESSION_RATE_LIMIT_PER_MINUTE), never against the project's, so open
 * dashboards cannot starve the project's /v1/send.
 *
 * The same exact rolling minute as the projects' (Migration20261123030000RateLimitSeconds), one
 * row per user. The window's arithmetic moves into one pure function both counters call, so the
 * two budgets cannot drift apart; each counter keeps its own table (its row lock, its foreign key).
 */
export class Migration20261127200000SessionRateLimit extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create unlogged table session_rate_limit_seconds (
        user_id uuid primary key references users (id) on delete cascade,
        second bigint not null,
        counts integer[] not null check (cardinality(counts) = 61)
      );

      -- The window of 61 one-second counts (counts[61] is the second \`newest\`) moved on to p_now,
      -- and up to p_requested more requests accepted in it so that the 61 seconds hold at most
      -- p_limit: what is left, the newest second, and how many were accepted.
      create function mailroom_rate_window_take(
        p_counts integer[], p_newest bigint, p_now bigint, p_requested integer, p_limit integer,
        out window_counts integer[], out newest bigint, out accepted integer
      ) language plpgsql immutable as $$
      declare
        used integer := 0;
        n integer;
      begin
        window_counts := p_counts;
        newest := p_newest;
        if p_now > newest then
          -- Slide the window: the seconds that left it drop off the front.
          window_counts := case when p_now - newest >= 61 then array_fill(0, array[61])
                                else window_counts[(p_now - newest + 1)::int:61] || array_fill(0, array[(p_now - newest)::int]) end;
          newest := p_now;
        end if;
        foreach n in array window_counts loop used := used + n; end loop;
        accepted := least(p_requested, greatest(0, p_limit - used));
        window_counts[61] := window_counts[61] + accepted;
      end
      $$;

      -- The projects' counter, unchanged in behaviour, now through the shared arithmetic.
      create or replace function mailroom_rate_limit_take(
        p_project uuid, p_requested integer, p_limit integer, p_at timestamptz default null,
        out window_counts integer[], out accepted integer
      ) language plpgsql as $$
      declare
        newest bigint;
      begin
        loop
          -- Waits for any other process counting this project, then reads its result.
          select r.second, r.counts into newest, window_counts
            from rate_limit_seconds r where r.project_id = p_project for update;
          exit when found;
          insert into rate_limit_seconds as r (project_id, second, counts)
            values (p_project, 0, array_fill(0, array[61]))
            on conflict (project_id) do nothing;
        end loop;
        -- Read after the lock, so the seconds of one project only move forward.
        select t.window_counts, t.newest, t.accepted into window_counts, newest, accepted
          from mailroom_rate_window_take(window_counts, newest, floor(extract(epoch from coalesce(p_at, clock_timestamp())))::bigint, p_requested, p_limit) t;
        update rate_limit_seconds r set second = newest, counts = window_counts where r.project_id = p_project;
      end
      $$;

      -- The same for one user's dashboard sessions.
      create function mailroom_session_rate_limit_take(
        p_user uuid, p_requested integer, p_limit integer, p_at timestamptz default null,
        out window_counts integer[], out accepted integer
      ) language plpgsql as $$
      declare
        newest bigint;
      begin
        loop
          select r.second, r.counts into newest, window_counts
            from session_rate_limit_seconds r where r.user_id = p_user for update;
          exit when found;
          insert into session_rate_limit_seconds as r (user_id, second, counts)
            values (p_user, 0, array_fill(0, array[61]))
            on conflict (user_id) do nothing;
        end loop;
        select t.window_counts, t.newest, t.accepted into window_counts, newest, accepted
          from mailroom_rate_window_take(window_counts, newest, floor(extract(epoch from coalesce(p_at, clock_timestamp())))::bigint, p_requested, p_limit) t;
        update session_rate_limit_seconds r set second = newest, counts = window_counts where r.user_id = p_user;
      end
      $$;
    `);
  }

  override async down(): Promise<void> {
    this.addSql(`
      drop function if exists mailroom_session_rate_limit_take(uuid, integer, integer, timestamptz);
      drop table if exists session_rate_limit_seconds;
      create or replace function mailroom_rate_limit_take(
        p_project uuid, p_requested integer, p_limit integer, p_at timestamptz default null,
        out window_counts integer[], out accepted integer
      ) language plpgsql as $$
      declare
        newest bigint;
        used integer := 0;
        n integer;
        now_second bigint;
      begin
        loop
          select r.second, r.counts into newest, window_counts
            from rate_limit_seconds r where r.project_id = p_project for update;
          exit when found;
          insert into rate_limit_seconds as r (project_id, second, counts)
            values (p_project, 0, array_fill(0, array[61]))
            on conflict (project_id) do nothing;
        end loop;
        now_second := floor(extract(epoch from coalesce(p_at, clock_timestamp())));
        if now_second > newest then
          window_counts := case when now_second - newest >= 61 then array_fill(0, array[61])
                                else window_counts[(now_second - newest + 1)::int:61] || array_fill(0, array[(now_second - newest)::int]) end;
          newest := now_second;
        end if;
        foreach n in array window_counts loop used := used + n; end loop;
        accepted := least(p_requested, greatest(0, p_limit - used));
        window_counts[61] := window_counts[61] + accepted;
        update rate_limit_seconds r set second = newest, counts = window_counts where r.project_id = p_project;
      end
      $$;
      drop function if exists mailroom_rate_window_take(integer[], bigint, bigint, integer, integer);
    `);
  }
}
