import fs from 'node:fs';

export default async function fastGlobalTeardown(): Promise<void> {
  const dir = (globalThis as { __mailroomFastDir?: string }).__mailroomFastDir;
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
}
