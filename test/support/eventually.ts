/** Retries `check` until it stops throwing (or returns truthy), for effects that happen asynchronously. */
export async function eventually<T>(check: () => Promise<T> | T, timeoutMs = 20_000, intervalMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await check();
      if (value !== false) return value;
      lastError = new Error('check returned false');
    } catch (err) {
      lastError = err;
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
  throw lastError;
}
