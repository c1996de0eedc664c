import { ApiDescriptionMismatch } from './apiDescriptionCheck';

/**
 * Retries `check` until it stops throwing (or returns truthy), for effects that happen
 * asynchronously. A response that does not fit the API description fails at once: a later state
 * of the data must not hide it.
 */
export async function eventually<T>(check: () => Promise<T> | T, timeoutMs = 20_000, intervalMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await check();
      if (value !== false) return value;
      lastError = new Error('check returned false');
    } catch (err) {
      if (err instanceof ApiDescriptionMismatch) throw err;
      lastError = err;
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
  throw lastError;
}
