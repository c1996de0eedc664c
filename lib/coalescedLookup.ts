interface Waiter<V> {
  resolve(value: V): void;
  reject(err: unknown): void;
}

/**
 * Concurrent lookups of the same key share one statement. A lookup asked while one for its key
 * is in flight waits for the next statement rather than taking the answer in flight, so every
 * answer was read after it was asked (a change committed before the request is always seen).
 * Under load this turns one round trip per request into one per key per round trip.
 */
export class CoalescedLookup<V> {
  private readonly pending = new Map<string, Waiter<V>[]>();
  private readonly inFlight = new Set<string>();

  constructor(private readonly load: (key: string) => Promise<V>) {}

  get(key: string): Promise<V> {
    return new Promise<V>((resolve, reject) => {
      const waiters = this.pending.get(key) ?? [];
      waiters.push({ resolve, reject });
      this.pending.set(key, waiters);
      this.run(key);
    });
  }

  private run(key: string): void {
    if (this.inFlight.has(key)) return;
    const waiters = this.pending.get(key);
    if (!waiters) return;
    this.pending.delete(key);
    this.inFlight.add(key);
    this.load(key)
      .then((value) => waiters.forEach((w) => w.resolve(value)))
      .catch((err) => waiters.forEach((w) => w.reject(err)))
      .finally(() => {
        this.inFlight.delete(key);
        this.run(key);
      });
  }
}
