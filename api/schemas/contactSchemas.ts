import { z } from 'zod';
import { dataProblem } from '../../services/contacts/contactDataRules';

/** `data` as sent on contact writes, track and send: an object within the limits of contract section 5. */
export const contactData = z.record(z.unknown(), { invalid_type_error: 'data must be an object' }).superRefine((data, ctx) => {
  const problem = dataProblem(data);
  if (problem) ctx.addIssue({ code: 'custom', message: problem.message, path: problem.field.split('.').slice(1), params: { code: problem.code } });
});

/** Reserved names (specification, POST /v1/track): the service emits these itself. */
export function isReservedEventName(name: string): boolean {
  return name.startsWith('email.') || name === 'contact.subscribed' || name === 'contact.unsubscribed' || /^segment\..+\.(entry|exit)$/.test(name);
}

export const eventName = z
  .string({ required_error: 'event is required', invalid_type_error: 'event must be a string' })
  .trim()
  .min(1)
  .max(200)
  .refine((s) => !/[\u0000-\u001f\u007f]/.test(s), { message: 'Event names must not contain control characters' })
  .superRefine((name, ctx) => {
    if (isReservedEventName(name)) {
      ctx.addIssue({ code: 'custom', message: `"${name}" is a reserved event name emitted by Mailroom itself`, params: { code: 'reserved_event' } });
    }
  });
