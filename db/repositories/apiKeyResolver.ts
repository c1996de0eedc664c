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
 * the same key while a lookup for it is in flight share the next statement, which adds all of
 * them to the window at once; each still gets its own place in the count (as if they had come
 * one by one), so the limiter decides exactly as before. Every statement reads the current
 * keys, so a regenerated key stops working at once.
 */
export class ApiKeyResolver {
  private readonly pending = new Map<string, { column: KeyColumn; value: string; waiters: Waiter[] }>();
  private readonly inFlight = new Set<string>();

  constructor(private readonly orm: Orm) {}

  resolve(column: KeyColumn, value: string): Promise<{ project: Project; hit: RateLimitHit } | null> {
    const id = `${column}:${value}`;
    return new Promise((resolve, reject) => {
      const entry = this.pending.get(id) ?? { column, value, waiters: [] };
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
      .findProjectAndHit(this.orm.em.fork(), entry.column, entry.value, waiters.length)
      .then((found) => {
        waiters.forEach((waiter, i) => {
          if (!found) return waiter.resolve(null);
          // The count as the i-th of these requests would have seen it alone.
          const current = found.hit.current - waiters.length + i + 1;
          waiter.resolve({ project: found.project, hit: { ...found.hit, current } });
        });
      })
      .catch((err) => waiters.forEach((waiter) => waiter.reject(err)))
      .finally(() => {
        this.inFlight.delete(id);
        this.run(id);
      });
  }
}
