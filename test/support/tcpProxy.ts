/**
 * A plain TCP proxy in front of a server (the Temporal frontend), for tests of what a client sees
 * when the server becomes unreachable, or when its requests arrive but its answers are lost.
 */
import net from 'node:net';
import type { AddressInfo } from 'node:net';

/**
 * `pass`: both ways. `refuse`: every connection is cut at once (the server is unreachable).
 * `loseAnswers`: what the client sends still reaches the server, what the server answers is dropped
 * (a network that fails after the request went out: the client cannot tell whether it was done).
 */
export type ProxyMode = 'pass' | 'refuse' | 'loseAnswers';

export interface TcpProxy {
  address: string;
  /** Changing the mode cuts the open connections, so none carries half of a stream; clients reconnect. */
  setMode(mode: ProxyMode): void;
  close(): Promise<void>;
}

export async function startTcpProxy(target: string): Promise<TcpProxy> {
  const i = target.lastIndexOf(':');
  const [host, port] = [target.slice(0, i), Number(target.slice(i + 1))];
  let mode: ProxyMode = 'pass';
  const sockets = new Set<net.Socket>();
  const track = (socket: net.Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
  };
  const cutAll = () => {
    for (const socket of sockets) socket.destroy();
  };
  const server = net.createServer((client) => {
    track(client);
    if (mode === 'refuse') return void client.destroy();
    const upstream = net.connect(port, host);
    track(upstream);
    client.on('data', (chunk) => upstream.write(chunk));
    upstream.on('data', (chunk) => {
      if (mode !== 'loseAnswers') client.write(chunk);
    });
    client.once('close', () => upstream.destroy());
    upstream.once('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    address: `127.0.0.1:${(server.address() as AddressInfo).port}`,
    setMode(next) {
      if (next === mode) return;
      // From `pass` to `loseAnswers`, open connections stay: the client's next request goes out on them and its answer is lost.
      if (!(mode === 'pass' && next === 'loseAnswers')) cutAll();
      mode = next;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        cutAll();
      }),
  };
}
