import type { EntityManager } from '@mikro-orm/postgresql';
import { contactRepository, type ContactRow, type RecordedEvent } from '../../../db/contacts/contactRepository';
import { dataProblem, splitDataChanges } from '../../contacts/contactDataRules';
import { StepConfigError, subscriptionAction } from '../stepConfigs';

/**
 * UPDATE_CONTACT `{ updates?, subscriptionAction?: "none"|"subscribe"|"unsubscribe" }`: the
 * contact data rules as for any contact write (null deletes, "" is ignored, reserved keys are
 * dropped), and a subscription change that emits contact.subscribed / contact.unsubscribed in
 * the same statement. Answers the events to hand to the triggers (they may start or wake other
 * executions). Repeating it changes nothing more and emits nothing more.
 */
export async function updateContactStep(
  em: EntityManager,
  input: { projectId: string; contact: ContactRow; config: Record<string, unknown> },
): Promise<{ events: RecordedEvent[]; output: Record<string, unknown> }> {
  const updates = input.config.updates ?? {};
  if (typeof updates !== 'object' || updates === null || Array.isArray(updates)) throw new StepConfigError('UPDATE_CONTACT updates must be an object');
  const problem = dataProblem(updates as Record<string, unknown>);
  if (problem) throw new StepConfigError(`UPDATE_CONTACT updates: ${problem.field}: ${problem.message}`);
  const action = subscriptionAction(input.config);
  const changes = splitDataChanges(updates as Record<string, unknown>);
  const [result] = await contactRepository.upsertByEmail(
    em,
    input.projectId,
    [
      {
        email: input.contact.email,
        subscribedIfNew: input.contact.subscribed,
        subscribedIfExisting: action === 'subscribe' ? true : action === 'unsubscribe' ? false : undefined,
        data: changes,
      },
    ],
    'workflow',
  );
  return {
    events: result.events,
    output: {
      set: Object.keys(changes.set),
      unset: changes.unset,
      subscribed: result.contact.subscribed,
      ...(result.subscriptionChangedTo !== undefined ? { subscriptionChangedTo: result.subscriptionChangedTo } : {}),
    },
  };
}
