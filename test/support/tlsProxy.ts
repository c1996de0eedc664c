/**
 * A TLS-terminating proxy in front of a plain-text Temporal frontend that, like a self-hosted
 * server with `requireClientAuth`, accepts only clients presenting a certificate signed by its CA.
 */
import fs from 'node:fs';
import net from 'node:net';
import tls from 'node:tls';
import type { AddressInfo } from 'node:net';

export interface TlsProxy {
  address: string;
  /** TLS handshakes refused so far (for example for want of a client certificate). */
  refusedHandshakes: number;
  /** Clients that completed the handshake and were passed through. */
  acceptedConnections: number;
  close(): Promise<void>;
}

export async function startMtlsProxy(options: { target: string; cert: string; key: string; ca: string }): Promise<TlsProxy> {
  const [targetHost, targetPort] = splitAddress(options.target);
  const sockets = new Set<net.Socket>();
  const track = (socket: net.Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  };
  const state = { refusedHandshakes: 0, acceptedConnections: 0 };
  const server = tls.createServer(
    {
      cert: fs.readFileSync(options.cert),
      key: fs.readFileSync(options.key),
      ca: fs.readFileSync(options.ca),
      requestCert: true,
      rejectUnauthorized: true,
      // gRPC runs over HTTP/2 and its clients insist on negotiating it.
      ALPNProtocols: ['h2'],
    },
    (clientSide) => {
      state.acceptedConnections++;
      track(clientSide);
      const upstream = net.connect(targetPort, targetHost);
      track(upstream);
      clientSide.pipe(upstream).pipe(clientSide);
      const end = () => {
        clientSide.destroy();
        upstream.destroy();
      };
      clientSide.on('error', end);
      upstream.on('error', end);
      clientSide.on('close', end);
      upstream.on('close', end);
    },
  );
  server.on('tlsClientError', () => {
    state.refusedHandshakes++;
  });
  server.on('connection', track);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    address: `127.0.0.1:${(server.address() as AddressInfo).port}`,
    get refusedHandshakes() {
      return state.refusedHandshakes;
    },
    get acceptedConnections() {
      return state.acceptedConnections;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      }),
  };
}

function splitAddress(address: string): [string, number] {
  const i = address.lastIndexOf(':');
  return [address.slice(0, i), Number(address.slice(i + 1))];
}
