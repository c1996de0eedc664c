/**
 * Sets an own property whatever the key: plain assignment of `__proto__` would replace the
 * object's prototype instead of storing a field called "__proto__".
 */
export function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}
