import type http from 'node:http';
import net from 'node:net';
import type { Socket } from 'node:net';

/**
 * A connection accepted before shutdown that has not sent a byte yet is waited on this long
 * (within the grace period) before it counts as idle: the client may be about to write its
 * request, and closing the socket then would reset a request sent on a connection we accepted.
 * Go's net/http Server.Shutdown waits the same 5 s for the same reason.
 */
const FIRST_REQUEST_WAIT_MS = 5000;

/**
 * Closing the listening socket resets every connection the kernel has completed but the process
 * has not accepted yet, and Node accepts one queued connection per turn of its event loop (so a
 * burst of connections to a busy API waits in that queue for a while). After the signal the API
 * therefore keeps accepting until no connection has come for LISTEN_QUIET_MS and at least
 * LISTEN_QUIET_CHECKS checks (each a loop turn apart, so a blocked loop is not mistaken for a quiet
 * queue), for at most half the grace period, and only then stops listening.
 */
const LISTEN_QUIET_MS = 100;
const LISTEN_QUIET_CHECKS = 3;
const LISTEN_CHECK_EVERY_MS = 10;

interface ConnectionState {
  acceptedAt: number;
  /** Responses not yet finished on this connection (more than one only with pipelining). */
  open: Set<http.ServerResponse>;
  /** socket.bytesRead when the last response finished: more since then means a request is arriving. */
  bytesReadAtLastResponse: number;
  served: number;
}

export interface DrainResult {
  /** Connections still open when the grace period ended, closed forcibly. */
  forced: number;
}

/** Resolves after one whole turn of the event loop, poll phase included. */
function nextLoopTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(() => setImmediate(resolve)));
}

/**
 * Graceful shutdown for a Node HTTP server that resets no request it accepted.
 *
 * Node's own `server.close()` calls `closeIdleConnections()`, and Node counts a connection as idle
 * whenever it is not in the middle of a request: a connection just accepted whose request is still
 * in the socket buffer, or a keep-alive connection whose next request has arrived but is not read
 * yet. Destroying those resets requests the client had already sent. And closing the listening
 * socket resets the connections the kernel completed but the process has not accepted yet.
 *
 * `drain()` instead:
 * 1. answers every request from now on with `Connection: close`, so the client sends no further
 *    request on that connection and Node closes it after the response; for `noticeMs` it goes on
 *    listening and answering as before (while /health says "draining"), so a load balancer's
 *    health check sees the 503 and stops sending before any connection is refused;
 * 2. accepts what the kernel has queued (see LISTEN_QUIET_MS), then stops listening: from here
 *    on new connections are refused. A connection the kernel completes in the moment between the
 *    last accept and the close is reset by the kernel before the process ever sees it (Linux
 *    offers no way to stop queueing without closing): its client gets ECONNRESET before any byte
 *    of an answer, as a refused one gets ECONNREFUSED, and either may retry elsewhere. That is the
 *    whole of what a client racing the close can see: never part of an answer, never a hang;
 * 3. waits for every request in progress to be answered, and for accepted connections to send
 *    their first request (up to FIRST_REQUEST_WAIT_MS); once no request is in progress, closes
 *    the idle keep-alive connections (nothing received since their last response);
 * 4. at the end of `graceMs`, closes whatever is left.
 */
export function trackConnections(server: http.Server) {
  const connections = new Map<Socket, ConnectionState>();
  let draining = false;
  let accepted = 0;
  let onChange: (() => void) | undefined;

  server.on('connection', (socket: Socket) => {
    accepted++;
    connections.set(socket, { acceptedAt: Date.now(), open: new Set(), bytesReadAtLastResponse: 0, served: 0 });
    socket.once('close', () => {
      connections.delete(socket);
      onChange?.();
    });
  });

  // Before the app's own listener, so the header is set before any middleware can answer.
  server.prependListener('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    const state = connections.get(req.socket);
    if (!state) return;
    state.open.add(res);
    if (draining) res.setHeader('Connection', 'close');
    const done = () => {
      if (!state.open.delete(res)) return;
      state.served++;
      state.bytesReadAtLastResponse = req.socket.bytesRead;
      onChange?.();
    };
    res.once('finish', done);
    res.once('close', done);
  });

  /** A request in progress, or bytes of the next one read since the last response. */
  function isBusy(socket: Socket, state: ConnectionState): boolean {
    return state.open.size > 0 || socket.bytesRead > state.bytesReadAtLastResponse;
  }

  function isAwaitingFirstRequest(state: ConnectionState, now: number): boolean {
    return state.served === 0 && now - state.acceptedAt < FIRST_REQUEST_WAIT_MS;
  }

  async function acceptWhatIsQueued(maxMs: number): Promise<void> {
    const start = Date.now();
    let lastArrival = start;
    let quietChecks = 0;
    let seen = accepted;
    while (Date.now() - start < maxMs) {
      // Timer callbacks are a loop turn apart: the poll phase, where connections are accepted, runs between them.
      await new Promise((resolve) => setTimeout(resolve, LISTEN_CHECK_EVERY_MS));
      if (accepted !== seen) {
        seen = accepted;
        lastArrival = Date.now();
        quietChecks = 0;
      } else if (++quietChecks >= LISTEN_QUIET_CHECKS && Date.now() - lastArrival >= LISTEN_QUIET_MS) {
        return;
      }
    }
  }

  async function drain(graceMs: number, noticeMs = 0): Promise<DrainResult> {
    draining = true;
    const deadline = Date.now() + graceMs;
    for (const state of connections.values()) {
      for (const res of state.open) if (!res.headersSent) res.setHeader('Connection', 'close');
    }
    if (noticeMs > 0) await new Promise((resolve) => setTimeout(resolve, Math.min(noticeMs, graceMs)));
    await acceptWhatIsQueued(Math.max(0, deadline - Date.now()) / 2);
    // Only the listener: http.Server.prototype.close would also destroy "idle" connections at once.
    const listenerClosed = new Promise<void>((resolve) => net.Server.prototype.close.call(server, () => resolve()));
    await nextLoopTurn();

    await new Promise<void>((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      let scheduled = false;
      let settled = false;
      const check = () => {
        scheduled = false;
        if (settled) return;
        clearTimeout(timer);
        const now = Date.now();
        // Idle keep-alive connections stay open while any request is still being answered: a
        // client that sends one more on them gets an answer (with Connection: close) instead of
        // racing the close. Once nothing is in progress, they are closed.
        if (![...connections].some(([socket, state]) => isBusy(socket, state))) {
          for (const [socket, state] of connections) if (!isAwaitingFirstRequest(state, now)) socket.destroy();
        }
        if (connections.size === 0 || now >= deadline) {
          settled = true;
          onChange = undefined;
          resolve();
          return;
        }
        // Wake for the next first-request deadline or the end of the grace period.
        let next = deadline;
        for (const state of connections.values()) {
          if (isAwaitingFirstRequest(state, now)) next = Math.min(next, state.acceptedAt + FIRST_REQUEST_WAIT_MS);
        }
        timer = setTimeout(check, Math.max(0, next - now));
      };
      onChange = () => {
        if (scheduled) return;
        scheduled = true;
        setImmediate(check);
      };
      check();
    });

    const forced = connections.size;
    for (const socket of connections.keys()) socket.destroy();
    await listenerClosed;
    return { forced };
  }

  return {
    drain,
    /** True from the start of drain(): /health answers 503 "draining". */
    isDraining: () => draining,
  };
}
