import proxyaddr from 'proxy-addr';
import type { AppContext } from '../state';

/**
 * Proxies on loopback or private networks (a reverse proxy on the same host, a container
 * network, a load balancer inside the VPC) are trusted to report the client in X-Forwarded-For;
 * anything else is the client itself. So a client that reaches Mailroom directly cannot choose
 * its own address by sending the header, and one behind a proxy is told apart from the others.
 */
const trustPrivateProxies = proxyaddr.compile(['loopback', 'linklocal', 'uniquelocal']);

/** The address of the client as far as Mailroom can know it (used to key the login throttle). */
export function clientAddress(ctx: AppContext): string {
  return proxyaddr(ctx.req, trustPrivateProxies);
}
