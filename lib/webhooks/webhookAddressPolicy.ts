import ipaddr from 'ipaddr.js';

/**
 * Which network addresses a WEBHOOK step may connect to (contract section 12). A webhook URL is
 * written by a project member, so without this rule it would let them make the worker call
 * anything the worker can reach: the cloud metadata service, the database, Temporal, the admin
 * interface of a router. The rule is applied to the address actually connected to, after DNS
 * resolution and on every redirect (webhookRequest.ts).
 *
 * Default: only globally routable unicast addresses. Everything ipaddr.js classifies as special
 * (loopback, RFC 1918 private, CGNAT 100.64/10, link-local, unique-local fc00::/7, unspecified,
 * multicast, broadcast, documentation and benchmarking nets, 240/4, 6to4 relays of such
 * addresses…) is refused, and so is every IPv6 address outside the global unicast block 2000::/3
 * (this also covers the deprecated IPv4-compatible ::a.b.c.d form). IPv6 forms that carry an IPv4
 * address (IPv4-mapped ::ffff:a.b.c.d, IPv4-translated ::ffff:0:a.b.c.d, NAT64 64:ff9b::/96,
 * 6to4 2002::/16) are judged by the IPv4 address they carry.
 *
 * `allowPrivate` (WEBHOOK_ALLOW_PRIVATE) lifts the rule for self-hosters whose receivers live on
 * their own network, and `allowedNetworks` (WEBHOOK_ALLOWED_NETWORKS) lifts it for the listed
 * CIDR blocks only. Neither lifts it for the cloud metadata endpoints: no webhook has a reason to
 * read instance credentials, and one leaked role key costs more than a refused step.
 */
export interface WebhookAddressPolicy {
  /** WEBHOOK_ALLOW_PRIVATE: any address except the metadata endpoints. */
  allowPrivate?: boolean;
  /** CIDR blocks (`10.0.5.0/24`, `fd12::/64`, `127.0.0.1/32`) allowed although not public. */
  allowedNetworks?: readonly string[];
}

/** The policy WEBHOOK_ALLOW_PRIVATE and WEBHOOK_ALLOWED_NETWORKS configure. */
export function webhookAddressPolicyFromConfig(config: { webhookAllowPrivate: boolean; webhookAllowedNetworks: readonly string[] }): WebhookAddressPolicy {
  return { allowPrivate: config.webhookAllowPrivate, allowedNetworks: config.webhookAllowedNetworks };
}

export type AddressVerdict = { allowed: true } | { allowed: false; reason: string };

/** Instance metadata services (AWS, GCP, Azure, Oracle, OpenStack; AWS ECS task metadata and its IPv6 form; Alibaba). */
const metadataAddresses = new Set(['169.254.169.254', '169.254.170.2', 'fd00:ec2::254', '100.100.100.200']);
/** Names that reach a metadata service without going through public DNS. */
const metadataHostnames = new Set(['metadata.google.internal', 'metadata.goog', 'metadata']);

const globalUnicastV6 = ipaddr.parseCIDR('2000::/3');
/** RFC 8215 local-use NAT64 prefix: what it translates to is the operator's choice, so it is not judged by the embedded address. */
const localUseNat64 = ipaddr.parseCIDR('64:ff9b:1::/48');

/** True for a name that must never be called whatever the policy (compared without a trailing dot, lower case). */
export function isMetadataHostname(hostname: string): boolean {
  return metadataHostnames.has(hostname.toLowerCase().replace(/\.$/, ''));
}

/** The network CIDR list of WEBHOOK_ALLOWED_NETWORKS, or the first entry that is not a CIDR block. */
export function parseAllowedNetworks(value: string | undefined): { networks: string[] } | { invalid: string } {
  const networks: string[] = [];
  for (const entry of (value ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    try {
      const [address, bits] = ipaddr.parseCIDR(entry);
      networks.push(`${address.toString()}/${bits}`);
    } catch {
      return { invalid: entry };
    }
  }
  return { networks };
}

/** Whether `address` (an IP literal, no brackets) may be connected to under `policy`. */
export function checkWebhookAddress(address: string, policy: WebhookAddressPolicy = {}): AddressVerdict {
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    parsed = ipaddr.parse(address);
  } catch {
    return { allowed: false, reason: `${address} is not an IP address` };
  }
  // The address a v4-carrying IPv6 form reaches is the IPv4 one; judge that.
  const effective = embeddedIpv4(parsed) ?? parsed;
  const shown = effective === parsed ? parsed.toString() : `${parsed.toString()} (${effective.toString()})`;

  if (metadataAddresses.has(effective.toString()) || metadataAddresses.has(parsed.toString())) {
    return { allowed: false, reason: `${shown} is a cloud metadata address` };
  }
  const special = specialRange(effective);
  if (!special) return { allowed: true };
  if (policy.allowPrivate) return { allowed: true };
  if (inAllowedNetworks(effective, policy.allowedNetworks) || inAllowedNetworks(parsed, policy.allowedNetworks)) {
    return { allowed: true };
  }
  return { allowed: false, reason: `${shown} is a ${special} address` };
}

/** The name of the special range `address` is in, or undefined for a public unicast address. */
function specialRange(address: ipaddr.IPv4 | ipaddr.IPv6): string | undefined {
  const range = address.range();
  if (address.kind() === 'ipv4') return range === 'unicast' ? undefined : describe(range);
  const v6 = address as ipaddr.IPv6;
  if (range !== 'unicast') return describe(range);
  if (!v6.match(globalUnicastV6)) return 'non-global IPv6';
  return undefined;
}

const rangeNames: Record<string, string> = {
  private: 'private (RFC 1918)',
  loopback: 'loopback',
  linkLocal: 'link-local',
  carrierGradeNat: 'carrier-grade NAT (100.64.0.0/10)',
  uniqueLocal: 'unique-local (fc00::/7)',
  unspecified: 'unspecified',
  multicast: 'multicast',
  broadcast: 'broadcast',
  reserved: 'reserved',
};

function describe(range: string): string {
  return rangeNames[range] ?? `special-purpose (${range})`;
}

function embeddedIpv4(address: ipaddr.IPv4 | ipaddr.IPv6): ipaddr.IPv4 | undefined {
  if (address.kind() !== 'ipv6') return undefined;
  const v6 = address as ipaddr.IPv6;
  const range = v6.range();
  const parts = v6.parts;
  const v4 = (high: number, low: number) => new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff]);
  if (range === 'ipv4Mapped' || range === 'rfc6145') return v4(parts[6], parts[7]);
  if (range === 'rfc6052' && !v6.match(localUseNat64)) return v4(parts[6], parts[7]);
  if (range === '6to4') return v4(parts[1], parts[2]);
  return undefined;
}

function inAllowedNetworks(address: ipaddr.IPv4 | ipaddr.IPv6, networks: readonly string[] | undefined): boolean {
  for (const network of networks ?? []) {
    const [base, bits] = ipaddr.parseCIDR(network);
    if (base.kind() === address.kind() && address.match(base, bits)) return true;
  }
  return false;
}
