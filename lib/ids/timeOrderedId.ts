import { v7 as uuidv7 } from 'uuid';

/**
 * The id of a new email or event: a UUIDv7 (RFC 9562), whose first 48 bits are the Unix time in
 * milliseconds, so rows written later get larger keys and the primary-key index only appends at
 * its right edge instead of splitting pages all over it (a random v4 touches a random leaf per
 * insert, which a table of millions no longer keeps in memory). `uuid`'s v7 adds a counter within
 * one millisecond, so ids made in one process also sort in the order they were made. Ids made
 * by the database (the `events.id` default, `mailroom_uuid_v7()`) have the same layout.
 *
 * An id still says nothing secret: its time is the row's `created_at`, which the API shows anyway.
 */
export function newTimeOrderedId(): string {
  return uuidv7();
}
