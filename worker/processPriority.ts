import fs from 'node:fs';
import os from 'node:os';
import type { Logger } from '../lib/logger';

/**
 * Lowers the worker's CPU priority to WORKER_NICE. Where the API and the worker share cores (one
 * machine, `npm start`, docker-compose on one host), the API's requests then get a core first and
 * the worker's background work (delivery, campaigns, executions, imports) takes what is left,
 * which under the send benchmark kept delivery at the accepted rate while the API's latency fell.
 * Called before the worker starts any thread: on Linux a thread's niceness is its own, and threads
 * inherit it from the thread that creates them (Temporal's runtime, the workflow threads). A
 * worker alone on its machine or container loses nothing: niceness only orders competing work.
 * Answers the niceness now in force (null when left alone), which 'worker started' reports.
 */
export function lowerWorkerPriority(nice: number, logger: Pick<Logger, 'warn'>): number | null {
  if (nice <= 0) return null;
  try {
    if (os.getPriority() >= nice) return os.getPriority();
    os.setPriority(nice);
    // Threads Node started before this line (V8's helpers, for garbage collection and compiling)
    // keep their own niceness on Linux: lower theirs too.
    const tasks = fs.existsSync('/proc/self/task') ? fs.readdirSync('/proc/self/task') : [];
    for (const tid of tasks) os.setPriority(Number(tid), nice);
    return nice;
  } catch (err) {
    logger.warn({ err, nice }, 'could not lower the worker CPU priority');
    return null;
  }
}
