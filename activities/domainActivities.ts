import { Context } from '@temporalio/activity';
import type { ActivityDeps } from './deps';
import { dnsResolverFromConfig } from '../lib/dns/dnsResolver';
import { recheckDomains, type RecheckSummary } from '../services/domains/domainVerification';

export function createDomainActivities({ config, orm, logger }: ActivityDeps) {
  const dns = dnsResolverFromConfig(config);
  return {
    /**
     * Re-checks the DNS records of every domain due (services/domains/domainVerification.ts). Heartbeats
     * after each domain (the SDK throttles them); a retried attempt resumes after the last page the
     * previous one finished.
     */
    async recheckDomains(): Promise<Omit<RecheckSummary, 'lastId'>> {
      const context = Context.current();
      const resumed = context.info.heartbeatDetails as RecheckSummary | undefined;
      const summary = await recheckDomains(() => orm.em.fork(), dns, {
        spfInclude: config.spfInclude,
        startAfter: resumed?.lastId ?? null,
        onProgress: (progress) => context.heartbeat(progress),
      });
      if (summary.temporaryFailures) {
        logger.warn({ temporaryFailures: summary.temporaryFailures }, 'domain re-check: some DNS lookups failed temporarily; those domains keep their status');
      }
      const { lastId: _lastId, ...counts } = summary;
      return counts;
    },
  };
}
export type DomainActivities = ReturnType<typeof createDomainActivities>;
