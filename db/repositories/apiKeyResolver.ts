import type { Orm } from '../orm';
import type { Project } from '../entities/project';
import { rateLimitRepository, type RateLimitHit } from './rateLimitRepository';

type KeyColumn = 'public_key' | 'secret_key_hash';

interface Waiter {
  resolve(value: { project: Project; hit: RateLimitHit } | null): void;
  reject(err: unknown): void;
}

/**
 * Resolves API keys to projects and counts each request for the rate limit. Requests carrying
 * the same key while a lookup for it is in flight share the next statement, which counts all of
 * them at once; each still gets its own verdict (the first ones accepted while the budget lasts,
 * in arrival order), so the limiter decides as if they had come one by one. Every statement
 * reads the current keys, so a regenerated key stops working at once.
 */
export class ApiKeyResolver {
  private readonly pending = new Map<string, { column: KeyColumn; value: string; limit: number; waiters: Waiter[] }>();
  private readonly inFlight = new Set<string>();

  constructor(private readonly orm: Orm) {}

  resolve(column: KeyColumn, value: string, limit: number): Promise<{ project: Project; hit: RateLimitHit } | null> {
    const id = `${column}:${limit}:${value}`;
    return new Promise((resolve, reject) => {
      const entry = this.pending.get(id) ?? { column, value, limit, waiters: [] };
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
      .findProjectAndHit(this.orm.em.fork(), entry.column, entry.value, { limit: entry.limit, requests: waiters.length })
      .then((found) => waiters.forEach((waiter, i) => waiter.resolve(found && { project: found.project, hit: found.hits[i] })))
      .catch((err) => waiters.forEach((waiter) => waiter.reject(err)))
      .finally(() => {
        this.inFlight.delete(id);
        this.run(id);
      });
  }
}
