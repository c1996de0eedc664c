/**
 * The project the user last opened, so /app/ opens it again. A project id is no secret (keys are
 * never stored in the browser: contract 21); if storage is unavailable the first project opens.
 */
const KEY = 'mailroom.lastProjectId';

export function lastProjectId(): string | null {
  try {
    return localStorage.getItem(KEY);
  } catch {
    return null;
  }
}

export function rememberProject(projectId: string): void {
  try {
    localStorage.setItem(KEY, projectId);
  } catch {
    /* private mode or storage off: nothing to remember */
  }
}
