/**
 * Preloaded into the worker (`node --require`) by `BENCH_ALLOC_PROFILE=1 npm run bench:campaign`:
 * V8's sampling heap profiler, keeping the objects garbage collection took as well, so the profile
 * says what the worker allocates (its garbage), not only what it still holds. Sampling starts
 * once the file MAILROOM_ALLOC_PROFILE + '.start' exists (the bench writes it just before the send
 * call, so start-up stays out; a signal would need a handler the worker's other code lets be) and
 * the profile is written to MAILROOM_ALLOC_PROFILE when the process exits. Once sampling runs, the
 * file MAILROOM_ALLOC_PROFILE + '.started' says so, and the bench sends only then.
 */
const fs = require('node:fs');
const inspector = require('node:inspector');

// The webhooks process gets the same node arguments; it would write its own (near empty) profile
// over the mail worker's when it exits last.
if (process.env.WORKER_ROLE === 'webhooks') return;

const session = new inspector.Session();
session.connect();
session.post('HeapProfiler.enable');
let sampling = false;
const waiting = setInterval(() => {
  if (!process.env.MAILROOM_ALLOC_PROFILE || !fs.existsSync(`${process.env.MAILROOM_ALLOC_PROFILE}.start`)) return;
  clearInterval(waiting);
  sampling = true;
  session.post(
    'HeapProfiler.startSampling',
    { samplingInterval: 8192, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true },
    (err) => {
      if (!err) fs.writeFileSync(`${process.env.MAILROOM_ALLOC_PROFILE}.started`, '');
    },
  );
}, 50);
waiting.unref();
process.on('exit', () => {
  if (!sampling || !process.env.MAILROOM_ALLOC_PROFILE) return;
  // An in-process session answers synchronously, so this runs before the process is gone.
  session.post('HeapProfiler.stopSampling', (err, result) => {
    if (!err) fs.writeFileSync(process.env.MAILROOM_ALLOC_PROFILE, JSON.stringify(result.profile));
  });
});
