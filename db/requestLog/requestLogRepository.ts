import type { EntityManager } from '@mikro-orm/postgresql';
import { queryRows, type TimestampText } from '../sql/rows';

/** How a logged request was authenticated: a key of either kind, or a dashboard session with X-Project-Id. */
export const REQUEST_AUTH_KINDS = ['secret', 'public', 'session'] as const;
export type RequestAuthKind = (typeof REQUEST_AUTH_KINDS)[number];

/** Status classes a page may be filtered by. */
export const STATUS_CLASSES = ['2xx', '3xx', '4xx', '5xx'] as const;
export type StatusClass = (typeof STATUS_CLASSES)[number];

/** One request as the API answered it. */
export interface RequestLogEntry {
  projectId: string;
  /** When the request arrived. */
  at: Date;
  method: string;
  /** The path asked for, without the query string. */
  path: string;
  /** The route's template (`/contacts/:id`); null when no route matched. */
  route: string | null;
  status: number;
  durationMs: number;
  auth: RequestAuthKind;
  requestId: string;
}

export interface RequestLogRow extends RequestLogEntry {
  id: string;
}

export interface RequestLogFilters {
  statusClass?: StatusClass;
  /** A route template (`/contacts/:id`) or the start of a path (`/v1/`). */
  path?: string;
  auth?: readonly RequestAuthKind[];
}

/** Where a page ended: the last row's time to the microsecond, and its id. */
export interface RequestLogKey {
  t: string;
  id: string;
}

interface RequestTableRow {
  id: string;
  project_id: string;
  created_at: TimestampText;
  method: string;
  path: string;
  route: string | null;
  status: number;
  duration_ms: number;
  auth: RequestAuthKind;
  request_id: string;
  key_t: string;
}

/** Longest path and route kept: a longer one is cut (the log is for reading, not replaying). */
export const MAX_LOGGED_PATH = 500;

const STATUS_RANGES: Record<StatusClass, [number, number]> = { '2xx': [200, 299], '3xx': [300, 399], '4xx': [400, 499], '5xx': [500, 599] };

/** The request log (GET /requests): batched inserts, keyset pages newest first, the retention's deletes. */
export const requestLogRepository = {
  /**
   * Inserts a batch in one statement (the rows travel as one JSON parameter). Rows of a project
   * deleted since the request are left out rather than failing the batch.
   */
  async insertMany(em: EntityManager, entries: readonly RequestLogEntry[]): Promise<number> {
    if (!entries.length) return 0;
    const rows = entries.map((e) => ({
      project_id: e.projectId,
      created_at: e.at.toISOString(),
      method: e.method.slice(0, 20),
      path: e.path.slice(0, MAX_LOGGED_PATH),
      route: e.route === null ? null : e.route.slice(0, MAX_LOGGED_PATH),
      status: e.status,
      duration_ms: e.durationMs,
      auth: e.auth,
      request_id: e.requestId,
    }));
    const [row] = await queryRows<{ n: number }>(
      em,
      `with added as (
         insert into api_requests (project_id, created_at, method, path, route, status, duration_ms, auth, request_id)
         select t.project_id, t.created_at, t.method, t.path, t.route, t.status, t.duration_ms, t.auth, t.request_id
         from json_to_recordset(?::json) as t(project_id uuid, created_at timestamptz, method text, path text, route text, status smallint,
                                             duration_ms real, auth text, request_id text)
         where exists (select 1 from projects p where p.id = t.project_id)
         returning 1
       )
       select count(*)::int as n from added`,
      [JSON.stringify(rows)],
    );
    return row.n;
  },

  /** A page of the project's requests, newest first. */
  async page(
    em: EntityManager,
    projectId: string,
    filters: RequestLogFilters,
    limit: number,
    after?: RequestLogKey,
  ): Promise<{ requests: RequestLogRow[]; hasMore: boolean; last: RequestLogKey | null }> {
    const where = ['project_id = ?'];
    const params: unknown[] = [projectId];
    if (filters.statusClass) {
      const [low, high] = STATUS_RANGES[filters.statusClass];
      where.push('status between ? and ?');
      params.push(low, high);
    }
    if (filters.path) {
      where.push('(route = ? or starts_with(path, ?))');
      params.push(filters.path, filters.path);
    }
    if (filters.auth?.length) {
      where.push(`auth in (${filters.auth.map(() => '?').join(', ')})`);
      params.push(...filters.auth);
    }
    if (after) {
      where.push('(created_at, id) < (?::timestamptz, ?::bigint)');
      params.push(after.t, after.id);
    }
    params.push(limit + 1);
    const rows = await queryRows<RequestTableRow>(
      em,
      `select id::text as id, project_id, created_at, method, path, route, status, duration_ms, auth, request_id,
              to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as key_t
       from api_requests where ${where.join(' and ')} order by created_at desc, id desc limit ?`,
      params,
    );
    const hasMore = rows.length > limit;
    const served = rows.slice(0, limit);
    const lastRow = served.at(-1);
    return {
      requests: served.map((r) => ({
        id: r.id,
        projectId: r.project_id,
        at: new Date(r.created_at),
        method: r.method,
        path: r.path,
        route: r.route,
        status: r.status,
        durationMs: r.duration_ms,
        auth: r.auth,
        requestId: r.request_id,
      })),
      hasMore,
      last: lastRow ? { t: lastRow.key_t, id: lastRow.id } : null,
    };
  },

  /** Removes at most `limit` rows older than `days` days (the retention rule); answers how many went. */
  async deleteOlderThan(em: EntityManager, days: number, limit: number): Promise<number> {
    const [row] = await queryRows<{ n: number }>(
      em,
      `with gone as (
         delete from api_requests where id in (select id from api_requests where created_at < now() - make_interval(days => ?) limit ?)
         returning 1
       )
       select count(*)::int as n from gone`,
      [days, limit],
    );
    return row.n;
  },
};
