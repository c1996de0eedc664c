import type { ActivityDeps } from './deps';
import { createAccountEmailActivities } from './accountEmailActivities';
import { createCleanupActivities } from './cleanupActivities';
import { createContactJobActivities } from './contactJobActivities';
import { createDomainActivities } from './domainActivities';

/** Every activity the worker registers, bound to the worker's services. */
export function createActivities(deps: ActivityDeps) {
  return {
    ...createAccountEmailActivities(deps),
    ...createCleanupActivities(deps),
    ...createContactJobActivities(deps),
    ...createDomainActivities(deps),
  };
}
export type { ActivityDeps };
