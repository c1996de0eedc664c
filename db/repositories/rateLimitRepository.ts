import type { EntityManager } from '@mikro-orm/postgresql';
import { ProjectSchema, type Project } from '../entities/project';
import { queryRows } from '../sql/rows';
import { senderDomainFromJson, verifiedSenderDomainParams, verifiedSenderDomainSql, type DomainRow } from '../domains/domainRepository';

/** The limiter's verdict on one request, with what its response headers say. */
export interface RateLimitHit {
  accepted: boolean;
  /** Requests accepted in the rolling minute, this one included when it was accepted. */
  used: number;
  /** Seconds until one more request will be accepted (0 when this one was). */
  retryAfterSeconds: number;
  /** Seconds until none of the requests counted now are in the rolling minute any more. */
  resetSeconds: number;
}

export interface RateLimitCount {
  /** Requests per rolling minute (RATE_LIMIT_PER_MINUTE, above 0). */
  limit: number;
  /** Requests arriving together (with one key, see ApiKeyResolver); each gets its own verdict. */
  requests?: number;
  /** The time to count at instead of the database clock: only tests move time. */
  at?: Date;
}

/**
 * One verdict per request, in arrival order: the first `accepted` pass, each seeing the count as
 * if it had come alone; the rest are refused. `counts` is the window after the statement, oldest
 * second first.
 */
function verdicts(counts: number[], accepted: number, requests: number, limit: number): RateLimitHit[] {
  const total = counts.reduce((sum, n) => sum + n, 0);
  // counts[i] has left the window at most i + 1 seconds from now.
  let resetSeconds = counts.length;
  while (resetSeconds > 1 && counts[resetSeconds - 1] === 0) resetSeconds--;
  let retryAfterSeconds = 1;
  for (let left = total - counts[0]; left >= limit && retryAfterSeconds < counts.length; retryAfterSeconds++) left -= counts[retryAfterSeconds];
  return Array.from({ length: requests }, (_, i) =>
    i < accepted
      ? { accepted: true, used: total - accepted + i + 1, retryAfterSeconds: 0, resetSeconds }
      : { accepted: false, used: total, retryAfterSeconds, resetSeconds },
  );
}

/** The counting call for the project `projectId` names (a parameter or a column). */
const take = (projectId: string) => `mailroom_rate_limit_take(${projectId}, ?::int, ?::int, ?::timestamptz)`;
/** Its parameters; a limit beyond the database's integer is as good as none. */
const takeParams = (requests: number, count: RateLimitCount) => [requests, Math.min(count.limit, 2 ** 31 - 1), count.at?.toISOString() ?? null];

export const rateLimitRepository = {
  /**
   * Counts requests of the project in the table every API process shares and decides each:
   * one statement, one round trip.
   */
  async hit(em: EntityManager, projectId: string, count: RateLimitCount): Promise<RateLimitHit[]> {
    const requests = count.requests ?? 1;
    const [row] = await em.execute<Array<{ window_counts: number[]; accepted: number }>>(`select * from ${take('?::uuid')}`, [
      projectId,
      ...takeParams(requests, count),
    ]);
    return verdicts(row.window_counts, row.accepted, requests, count.limit);
  },

  /**
   * Counts one request of a user's dashboard session (cookie + X-Project-Id) against the user's
   * own budget (contract 4), never the project's: the same rolling minute, its own table.
   */
  async hitSession(em: EntityManager, userId: string, count: RateLimitCount): Promise<RateLimitHit> {
    const [row] = await em.execute<Array<{ window_counts: number[]; accepted: number }>>(
      'select * from mailroom_session_rate_limit_take(?::uuid, 1, ?::int, ?::timestamptz)',
      [userId, ...takeParams(1, count).slice(1)],
    );
    return verdicts(row.window_counts, row.accepted, 1, count.limit)[0];
  },

  /**
   * The key lookup and the request count in one round trip: every key-authenticated request
   * makes both, so this halves the statements in front of every endpoint. An unknown key counts
   * for no project. With `senderCandidates` (a sender address's domain and its parents), the same
   * statement also answers the project's verified domain covering them (the sender-domain rule,
   * db/domains/domainRepository.ts): POST /v1/send asks it here rather than in a statement of its own.
   */
  async findProjectAndHit(
    em: EntityManager,
    keyColumn: 'public_key' | 'secret_key_hash',
    keyValue: string,
    count: RateLimitCount,
    senderCandidates?: string[],
  ): Promise<{ project: Project; hits: RateLimitHit[]; senderDomain?: DomainRow | null } | null> {
    const requests = count.requests ?? 1;
    const withSender = senderCandidates !== undefined && senderCandidates.length > 0;
    // The project's columns go to em.map as they came (it reads its own timestamps); the counts are typed.
    const rows = await queryRows<Record<string, unknown> & { rl_window_counts: number[]; rl_accepted: number; rl_sender_domain?: unknown }>(
      em,
      `with p as (select * from projects where ${keyColumn} = ?)
       select p.*, t.window_counts as rl_window_counts, t.accepted as rl_accepted
         ${withSender ? `, ${verifiedSenderDomainSql('p.id')} as rl_sender_domain` : ''}
       from p cross join lateral ${take('p.id')} t`,
      [keyValue, ...(withSender ? verifiedSenderDomainParams(senderCandidates) : []), ...takeParams(requests, count)],
    );
    if (!rows.length) return null;
    const { rl_window_counts, rl_accepted, rl_sender_domain, ...projectRow } = rows[0];
    return {
      project: em.map(ProjectSchema, projectRow),
      hits: verdicts(rl_window_counts, rl_accepted, requests, count.limit),
      ...(withSender ? { senderDomain: senderDomainFromJson(rl_sender_domain) } : {}),
    };
  },

  /** Removes the projects' and users' rows whose newest second is more than `idleSeconds` ago; answers how many went. */
  async deleteIdle(em: EntityManager, idleSeconds: number): Promise<number> {
    const [row] = await em.execute<Array<{ n: number }>>(
      `with projects_gone as (delete from rate_limit_seconds where second < extract(epoch from now()) - ?::int returning 1),
            users_gone as (delete from session_rate_limit_seconds where second < extract(epoch from now()) - ?::int returning 1)
       select ((select count(*) from projects_gone) + (select count(*) from users_gone))::int as n`,
      [idleSeconds, idleSeconds],
    );
    return row.n;
  },

  /** Requests accepted for the project in the rolling minute now (the security overview shows it). */
  async usedNow(em: EntityManager, projectId: string): Promise<number> {
    const [row] = await em.execute<Array<{ used: number }>>(
      `select coalesce(sum(c.n) filter (where c.i > (floor(extract(epoch from clock_timestamp())) - r.second)), 0)::int as used
       from rate_limit_seconds r cross join lateral unnest(r.counts) with ordinality as c(n, i)
       where r.project_id = ?`,
      [projectId],
    );
    return row?.used ?? 0;
  },
};
