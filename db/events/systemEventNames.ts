/**
 * The event names Mailroom records itself: their one home is shared/eventNames.ts, where the
 * dashboard reads them too. This re-export keeps the server's importers (the activity feed's SQL,
 * segments, the workflow field catalogue, the track schema) as they were.
 */
export { SYSTEM_EVENT_NAMES, type SystemEventName, segmentEntryEventName, segmentExitEventName, isReservedEventName } from '../../shared/eventNames';
