/** The most of `times` (milliseconds) that fall within any one window of `windowMs`, both ends included. */
export function maxInAnyWindow(times: number[], windowMs: number): number {
  const sorted = [...times].sort((a, b) => a - b);
  let most = 0;
  for (let end = 0, start = 0; end < sorted.length; end++) {
    while (sorted[end] - sorted[start] > windowMs) start++;
    most = Math.max(most, end - start + 1);
  }
  return most;
}
