import type { EntityManager } from '@mikro-orm/postgresql';
import { automationRepository } from '../../db/automations/automationRepository';
import { contactFields } from '../../db/contacts/contactFields';
import { eventRepository } from '../../db/events/eventRepository';
import { SYSTEM_EVENT_NAMES, segmentEntryEventName, segmentExitEventName } from '../../db/events/systemEventNames';

/** How many of the newest events are read for event data keys. */
const EVENT_FIELD_SAMPLE = 10_000;

export interface AutomationFields {
  contact: Array<{ field: string; type: string }>;
  data: Array<{ field: string; type: string; coverage: number }>;
  events: Array<{ name: string; fields: Array<{ field: string; type: string }> }>;
}

/**
 * GET /workflows/fields: what a workflow's triggers and conditions may name. The contact's own
 * fields and data keys, and every event name a workflow could wait for: those the project has
 * recorded, the ones Mailroom records itself (even before the project has seen one), and its
 * tracked segments' entry and exit events. Each event lists the data keys of its newest
 * EVENT_FIELD_SAMPLE events, typed by their most common JSON type.
 */
export async function automationFields(em: EntityManager, projectId: string): Promise<AutomationFields> {
  const { fields } = await contactFields.list(em, projectId);
  const contact = fields.filter((f) => !f.field.startsWith('data.')).map((f) => ({ field: `contact.${f.field}`, type: f.type }));
  const data = fields.filter((f) => f.field.startsWith('data.')).map((f) => ({ field: f.field, type: f.type, coverage: f.coverage }));

  const rows = await automationRepository.eventDataFields(em, projectId, EVENT_FIELD_SAMPLE);
  const byName = new Map<string, Map<string, Map<string, number>>>();
  for (const row of rows) {
    const keys = byName.get(row.name) ?? new Map<string, Map<string, number>>();
    byName.set(row.name, keys);
    if (row.key === null) continue;
    const types = keys.get(row.key) ?? new Map<string, number>();
    types.set(row.type ?? 'null', (types.get(row.type ?? 'null') ?? 0) + row.n);
    keys.set(row.key, types);
  }
  const names = new Set([...(await eventRepository.names(em, projectId)), ...SYSTEM_EVENT_NAMES]);
  for (const slug of await automationRepository.trackedSegmentSlugs(em, projectId)) {
    names.add(segmentEntryEventName(slug));
    names.add(segmentExitEventName(slug));
  }
  const events = [...names].sort().map((name) => ({
    name,
    fields: [...(byName.get(name) ?? new Map<string, Map<string, number>>()).entries()]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([key, types]) => ({ field: `event.${key}`, type: [...types.entries()].sort((a, b) => b[1] - a[1])[0][0] })),
  }));
  return { contact, data, events };
}
