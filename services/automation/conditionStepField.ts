/**
 * What the `field` of a CONDITION step names (contract section 12: "field over `contact.*`,
 * `data.*`, `event.*`"), and the condition-tree field it is checked and evaluated as, so that the
 * one set of operator and value rules (db/conditions) covers workflow conditions too:
 *
 * - `contact.email`, `contact.subscribed`, `contact.createdAt`, `contact.updatedAt`: the contact's
 *   own fields, read fresh when the step runs (tree fields `email`, `subscribed`, `createdAt`, `updatedAt`);
 * - `contact.data.<path>` and its short form `data.<path>`: the contact's custom data, read fresh
 *   (tree field `data.<path>`);
 * - `event.<path>`: the execution's context, i.e. the data of the event that started it, merged
 *   with the data of every event a WAIT_FOR_EVENT step received since. Its values follow the rules
 *   of custom data (tree field `data.<path>`, evaluated over the context instead of the contact).
 */
export type ConditionStepField =
  | { source: 'contact'; treeField: 'email' | 'subscribed' | 'createdAt' | 'updatedAt' }
  | { source: 'contactData'; path: string[]; treeField: string }
  | { source: 'event'; path: string[]; treeField: string };

const CONTACT_FIELDS = ['email', 'subscribed', 'createdAt', 'updatedAt'] as const;
const MAX_PATH_PARTS = 10;
const MAX_PART_LENGTH = 100;

function pathOf(rest: string): string[] | null {
  const parts = rest.split('.');
  return rest && parts.length <= MAX_PATH_PARTS && parts.every((p) => p.length >= 1 && p.length <= MAX_PART_LENGTH) ? parts : null;
}

/** Null for a field outside the three namespaces or with an empty or over-long path. */
export function parseConditionStepField(field: string): ConditionStepField | null {
  if (field.startsWith('contact.')) {
    const rest = field.slice('contact.'.length);
    if ((CONTACT_FIELDS as readonly string[]).includes(rest)) return { source: 'contact', treeField: rest as (typeof CONTACT_FIELDS)[number] };
    if (rest.startsWith('data.')) {
      const path = pathOf(rest.slice('data.'.length));
      return path ? { source: 'contactData', path, treeField: `data.${path.join('.')}` } : null;
    }
    return null;
  }
  if (field.startsWith('data.')) {
    const path = pathOf(field.slice('data.'.length));
    return path ? { source: 'contactData', path, treeField: `data.${path.join('.')}` } : null;
  }
  if (field.startsWith('event.')) {
    const path = pathOf(field.slice('event.'.length));
    return path ? { source: 'event', path, treeField: `data.${path.join('.')}` } : null;
  }
  return null;
}

export const CONDITION_STEP_FIELD_HELP =
  "field must be contact.email, contact.subscribed, contact.createdAt, contact.updatedAt, contact.data.<key>, data.<key> (the contact's data) or event.<key> (the event data of the execution)";
