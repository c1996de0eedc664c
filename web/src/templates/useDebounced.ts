import { useEffect, useState } from 'react';

/** The value as it was `delay` ms after its last change: what a live preview or a search follows as the user types. */
export function useDebounced<T>(value: T, delay: number): T {
  const [settled, setSettled] = useState(value);
  useEffect(() => {
    const timer = setTimeout(() => setSettled(value), delay);
    return () => clearTimeout(timer);
  }, [value, delay]);
  return settled;
}
