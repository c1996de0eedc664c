import { Context } from '@temporalio/activity';
import type { ActivityDeps } from './deps';
import { dnsResolverFromConfig } from '../lib/dns/dnsResolver';
import { cachingDnsResolver } from '../lib/dns/cachingDnsResolver';
import { processInboundMessages } from '../services/inbound/inboundProcessing';
import { inboundMessageRepository, type UnprocessedGroup } from '../db/inbound/inboundMessageRepository';

/** Mail in (contract 20): processing what the inbound listener stored, and the sweep's search. */
export function createInboundActivities(deps: ActivityDeps) {
  // Received mail asks the same sender domains' SPF and DMARC records again and again: a minute's
  // cache, as a receiving MTA's resolver keeps them (DNS TTLs are rarely shorter).
  const dns = cachingDnsResolver(dnsResolverFromConfig(deps.config), { ttlMs: 60_000, maxEntries: 10_000 });
  return {
    async processInboundMessages(input: { messageIds: string[] }): Promise<{ processed: number }> {
      const heartbeat = () => Context.current().heartbeat();
      const processed = await processInboundMessages(
        { orm: deps.orm, eventTriggers: deps.eventTriggers, dns, returnPathSubdomain: deps.config.smtpListeners.returnPathSubdomain, logger: deps.logger },
        input.messageIds,
        heartbeat,
      );
      return { processed };
    },

    async findUnprocessedInbound(input: { olderThanSeconds: number; limit: number }): Promise<UnprocessedGroup[]> {
      return inboundMessageRepository.findUnprocessed(deps.orm.em.fork(), input.olderThanSeconds, input.limit);
    },
  };
}

export type InboundActivities = ReturnType<typeof createInboundActivities>;
