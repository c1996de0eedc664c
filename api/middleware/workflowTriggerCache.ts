import type { Middleware } from 'koa';
import type { AppState } from '../state';
import { forgetAutomationTriggers } from '../../services/automation/executionTriggers';

/**
 * After any change under /workflows (enabling, a new trigger event, a WAIT_FOR_EVENT step), this
 * process forgets the project's cached trigger and wait names, so the next event is matched
 * against the definitions as they are now. Other processes see the change within a second.
 */
export function forgetWorkflowTriggersAfterWrites(): Middleware<AppState> {
  return async (ctx, next) => {
    try {
      await next();
    } finally {
      if (ctx.method !== 'GET' && ctx.method !== 'HEAD' && ctx.path.startsWith('/workflows') && ctx.state.project)
        forgetAutomationTriggers(ctx.state.project.id);
    }
  };
}
