/**
 * The retry policy of the activities of scheduled, periodic work (sweeps, clean-up, rechecks,
 * usage reports): it rides out a database restart or failover of about a minute (waits of 1, 2,
 * 4, 8, then 15 s; each attempt itself learns within 10 s that PostgreSQL is away) rather than
 * failing the run within seconds and leaving the work, and an error in the log, to the next tick.
 * Past that, the run fails and the next scheduled one takes over (overlaps are skipped).
 */
export const PERIODIC_ACTIVITY_RETRY = { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '15 seconds', maximumAttempts: 8 } as const;
