import pino, { type Logger, type DestinationStream } from 'pino';

export type { Logger };

/**
 * Structured JSON logs, one object per line, for the API, the worker and the start command.
 * `destination` lets tests capture the lines they assert on.
 */
export function createLogger(options: { level: string; name: string; destination?: DestinationStream }): Logger {
  return pino(
    {
      level: options.level,
      name: options.name,
      base: { pid: process.pid, service: options.name },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      redact: { paths: ['*.password', '*.secretKey', 'req.headers.authorization', 'req.headers.cookie'], remove: true },
    },
    // Asynchronous stdout: writing a line per request synchronously takes a share of the API's
    // CPU under load. flushLogger() empties the buffer before the process exits.
    options.destination ?? pino.destination({ dest: 1, sync: false }),
  );
}

/** Writes out buffered log lines; call before process.exit. */
export function flushLogger(logger: Logger): void {
  const stream = (logger as unknown as Record<symbol, { flushSync?: () => void }>)[pino.symbols.streamSym];
  try {
    stream?.flushSync?.();
  } catch {
    // stdout already closed: nothing left to save
  }
}
