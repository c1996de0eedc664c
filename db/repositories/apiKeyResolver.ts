import type { Orm } from '../orm';
import type { Project } from '../entities/project';
import type { DomainRow } from '../domains/domainRepository';
import { rateLimitRepository, type RateLimitHit } from './rateLimitRepository';

type KeyColumn = 'public_key' | 'secret_key_hash';

/** A resolved key: its project, the request's rate-limit verdict and, when asked, the sender's verified domain (null: none). */
export interface ResolvedKey {
  project: Project;
  hit: RateLimitHit;
  senderDomain?: DomainRow | null;
}

interface Waiter {
  resolve(value: ResolvedKey | null): void;
  reject(err: unknown): void;
}

/**
 * Resolves API keys to projects and counts each request for the rate limit. Requests carrying
 * the same key (and asking about the same sender domains) while a lookup for it is in flight
 * share the next statement, which counts all of them at once; each still gets its own verdict
 * (the first ones accepted while the budget lasts, in arrival order), so the limiter decides as
 * if they had come one by one. Every statement reads the current keys and domains, so a
 * regenerated key stops working, and a domain no longer verified stops sending, at once.
 */
export class ApiKeyResolver {
  private readonly pending = new Map<string, { column: KeyColumn; value: string; limit: number; senderCandidates?: string[]; waiters: Waiter[] }>();
  private readonly inFlight = new Set<string>();

  constructor(private readonly orm: Orm) {}

  /** `senderCandidates`: a sender address's domain and its parents, whose verified domain the same statement answers. */
  resolve(column: KeyColumn, value: string, limit: number, senderCandidates?: string[]): Promise<ResolvedKey | null> {
    const id = `${column}:${limit}:${value}:${senderCandidates?.join(',') ?? ''}`;
    return new Promise((resolve, reject) => {
      const entry = this.pending.get(id) ?? { column, value, limit, senderCandidates, waiters: [] };
      entry.waiters.push({ resolve, reject });
      this.pending.set(id, entry);
      this.run(id);
    });
  }

  private run(id: string): void {
    if (this.inFlight.has(id)) return;
    const entry = this.pending.get(id);
    if (!entry) return;
    this.pending.delete(id);
    this.inFlight.add(id);
    const { waiters } = entry;
    rateLimitRepository
      .findProjectAndHit(this.orm.em.fork(), entry.column, entry.value, { limit: entry.limit, requests: waiters.length }, entry.senderCandidates)
      .then((found) =>
        waiters.forEach((waiter, i) =>
          waiter.resolve(found && { project: found.project, hit: found.hits[i], ...('senderDomain' in found ? { senderDomain: found.senderDomain } : {}) }),
        ),
      )
      .catch((err) => waiters.forEach((waiter) => waiter.reject(err)))
      .finally(() => {
        this.inFlight.delete(id);
        this.run(id);
      });
  }
}
