/**
 * A duplicate's name: the original followed by " (copy)", cut so that it stays within
 * `maxLength` and never splitting a surrogate pair (PostgreSQL cannot store half of one).
 */
export function copyName(name: string, maxLength: number): string {
  const suffix = ' (copy)';
  let base = name.length + suffix.length > maxLength ? name.slice(0, maxLength - suffix.length) : name;
  if (/[\ud800-\udbff]$/.test(base)) base = base.slice(0, -1);
  return base + suffix;
}
