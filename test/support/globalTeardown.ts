import fs from 'node:fs';

export default async function globalTeardown(): Promise<void> {
  const stops = (globalThis as { __mailroomStops?: Array<() => Promise<void>> }).__mailroomStops ?? [];
  for (const stop of stops) {
    try {
      await stop();
    } catch (err) {
      // eslint-disable-next-line no-console -- after the last test file: no reporter is left to tell, and the other stops still run
      console.error('teardown:', err);
    }
  }
  const runDir = process.env.MAILROOM_TEST_RUN_DIR;
  if (runDir) fs.rmSync(runDir, { recursive: true, force: true });
}
