import { Migration } from '@mikro-orm/migrations';

/**
 * The rate limit becomes an exact rolling minute: per project, one row holding how many requests
 * were accepted in each of the last 61 seconds, replacing the per-clock-minute counters (whose
 * sliding-window estimate let up to twice the limit through when the previous minute's requests
 * were bunched at its end).
 *
 * One row per project, changed by one function under the row's lock, so that every API process
 * decides against the same, current numbers: the count of the window and the increment happen
 * under one lock, with nothing read from an older snapshot.
 */
export class Migration20261123030000RateLimitSeconds extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      drop table rate_limit_windows;

      -- Counters are disposable: unlogged skips the WAL (and its fsync) on the hottest write.
      create unlogged table rate_limit_seconds (
        project_id uuid primary key references projects (id) on delete cascade,
        -- The epoch second counts[61] belongs to; counts[1] is 60 seconds before it.
        second bigint not null,
        counts integer[] not null check (cardinality(counts) = 61)
      );

      -- Accepts up to p_requested requests for the project at p_at (the database clock when null;
      -- an explicit time is for tests), so that no 61 consecutive whole seconds ever hold more
      -- than p_limit accepted requests; hence no 60-second window, wherever it starts, does.
      -- Refused requests are not counted. Returns how many were accepted and the counts of the
      -- window afterwards (oldest second first, the current second last).
      create function mailroom_rate_limit_take(
        p_project uuid, p_requested integer, p_limit integer, p_at timestamptz default null,
        out window_counts integer[], out accepted integer
      ) language plpgsql as $$
      declare
        now_second bigint;
        newest bigint;
        used integer := 0;
        n integer;
      begin
        loop
          -- Waits for any other process counting this project, then reads its result.
          select r.second, r.counts into newest, window_counts
            from rate_limit_seconds r where r.project_id = p_project for update;
          exit when found;
          -- The project's first request (or the first since the hourly cleanup): create its row,
          -- unless another process just did, and lock it on the next turn.
          insert into rate_limit_seconds as r (project_id, second, counts)
            values (p_project, 0, array_fill(0, array[61]))
            on conflict (project_id) do nothing;
        end loop;

        -- Read after the lock, so the seconds of one project only move forward.
        now_second := floor(extract(epoch from coalesce(p_at, clock_timestamp())));
        if now_second > newest then
          -- Slide the window: the seconds that left it drop off the front.
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
    `);
  }

  override async down(): Promise<void> {
    this.addSql(`
      drop function if exists mailroom_rate_limit_take(uuid, integer, integer, timestamptz);
      drop table if exists rate_limit_seconds;
      create unlogged table rate_limit_windows (
        project_id uuid not null,
        window_start timestamptz not null,
        count integer not null,
        primary key (project_id, window_start)
      );
    `);
  }
}
