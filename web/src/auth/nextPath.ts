/**
 * Where to go after logging in: the dashboard path the user was sent away from (`?next=`), if it
 * is one (a path of this app, not another site's address), else the start.
 */
export function nextPath(next: string | null): string {
  if (!next || !next.startsWith('/') || next.startsWith('//') || next.includes('\\')) return '/';
  return next;
}

/** The log-in page's address that comes back to `path` afterwards. */
export function logInPathFor(path: string): string {
  return path === '/' ? '/login' : `/login?next=${encodeURIComponent(path)}`;
}
