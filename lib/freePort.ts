import net from 'node:net';

/**
 * Asks the OS for a TCP port that is free right now on `host` (listen on port 0, read the
 * port, close). Another process could take it before the caller binds it; callers that
 * start a server on it should be ready to retry.
 */
export function findFreePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.once('error', reject);
    server.listen({ port: 0, host, exclusive: true }, () => {
      const address = server.address();
      if (address === null || typeof address === 'string') {
        server.close();
        reject(new Error('Could not determine a free TCP port'));
        return;
      }
      const { port } = address;
      server.close((err) => (err ? reject(err) : resolve(port)));
    });
  });
}
