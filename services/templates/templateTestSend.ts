import type { EntityManager } from '@mikro-orm/postgresql';
import type { TemplateRow } from '../../db/templates/templateRepository';
import { sendTestCopy, type TestCopySendDeps, type TestCopySent } from '../sending/testCopySend';

/**
 * POST /templates/:id/test: one rendered copy of a template to one address, `[TEST] …`, as a
 * campaign's test is (services/sending/testCopySend.ts says how): in no template's emails and no
 * contact's history. `data` fills the template's variables over a contact's own.
 */
export function sendTemplateTest(
  deps: TestCopySendDeps,
  em: EntityManager,
  template: TemplateRow,
  address: string,
  data: Record<string, unknown> = {},
): Promise<TestCopySent> {
  return sendTestCopy(deps, em, { ...template, source: 'TRANSACTIONAL' }, address, data);
}
