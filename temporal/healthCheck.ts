/**
 * A health probe that answers fast whatever the probed service does: the result is cached for
 * `maxAgeMs`, at most one probe runs at a time, and a caller waits at most `answerWithinMs` for
 * a fresh one, so a load balancer polling /health never piles up slow calls to a dead Temporal.
 */
export interface CachedHealthCheckOptions {
  /** A result younger than this is answered from the cache. */
  maxAgeMs?: number;
  /** A probe still running after this long counts as down for the caller (it keeps running). */
  answerWithinMs?: number;
}

export class CachedHealthCheck {
  private lastResult: { healthy: boolean; at: number } | undefined;
  private inFlight: Promise<boolean> | undefined;
  private readonly maxAgeMs: number;
  private readonly answerWithinMs: number;

  /** `probe` resolves when healthy and rejects when not. */
  constructor(
    private readonly probe: () => Promise<unknown>,
    options: CachedHealthCheckOptions = {},
  ) {
    this.maxAgeMs = options.maxAgeMs ?? 1000;
    this.answerWithinMs = options.answerWithinMs ?? 800;
  }

  async isHealthy(): Promise<boolean> {
    if (this.lastResult && Date.now() - this.lastResult.at < this.maxAgeMs) return this.lastResult.healthy;
    this.inFlight ??= this.probe().then(
      () => this.record(true),
      () => this.record(false),
    );
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), this.answerWithinMs);
    });
    try {
      return await Promise.race([this.inFlight, timedOut]);
    } finally {
      clearTimeout(timer);
    }
  }

  private record(healthy: boolean): boolean {
    this.lastResult = { healthy, at: Date.now() };
    this.inFlight = undefined;
    return healthy;
  }
}
