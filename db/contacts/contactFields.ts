import type { EntityManager } from '@mikro-orm/postgresql';
import { textArrayLiteral } from '../sql/textArrayLiteral';

export type FieldType = 'string' | 'number' | 'boolean' | 'date' | 'object' | 'array';

export const STANDARD_FIELDS: Array<{ field: string; type: FieldType }> = [
  { field: 'email', type: 'string' },
  { field: 'subscribed', type: 'boolean' },
  { field: 'createdAt', type: 'date' },
  { field: 'updatedAt', type: 'date' },
];

/**
 * `data.a.b` (or `a.b`) → the JSON path `{a,b}` inside contacts.data; null for standard fields
 * and malformed names.
 */
export function customFieldPath(field: string): string[] | null {
  const name = field.startsWith('data.') ? field.slice(5) : field;
  if (!name || STANDARD_FIELDS.some((f) => f.field === field)) return null;
  const parts = name.split('.');
  if (parts.some((p) => p.length < 1 || p.length > 100) || parts.length > 10) return null;
  return parts;
}

// ISO 8601 dates and date-times, as strings in data, are typed "date". Bound as a parameter:
// knex would read its `?` characters as binding markers.
const ISO_DATE = '^\\d{4}-\\d{2}-\\d{2}([T ]\\d{2}:\\d{2}(:\\d{2}(\\.\\d+)?)?(Z|[+-]\\d{2}:?\\d{2})?)?$';

export const contactFields = {
  /** Standard fields, then every top-level data key with its most common type and its coverage in percent. */
  async list(em: EntityManager, projectId: string) {
    const [{ n: total }] = await em.execute(`select count(*)::int as n from contacts where project_id = ?`, [projectId]);
    const rows = await em.execute<Array<{ key: string; type: FieldType; n: number }>>(
      `select e.key,
              case when jsonb_typeof(e.value) = 'string' and (e.value #>> '{}') ~ ? then 'date'
                   when jsonb_typeof(e.value) = 'null' then 'string'
                   else jsonb_typeof(e.value) end as type,
              count(*)::int as n
       from contacts c, jsonb_each(c.data) e
       where c.project_id = ?
       group by 1, 2`,
      [ISO_DATE, projectId],
    );
    const byKey = new Map<string, { contacts: number; types: Map<FieldType, number> }>();
    for (const row of rows) {
      const entry = byKey.get(row.key) ?? { contacts: 0, types: new Map() };
      entry.contacts += row.n;
      entry.types.set(row.type, (entry.types.get(row.type) ?? 0) + row.n);
      byKey.set(row.key, entry);
    }
    const coverage = (n: number) => (total ? Math.round((n / total) * 1000) / 10 : 0);
    const custom = [...byKey.entries()]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([key, entry]) => ({
        field: `data.${key}`,
        type: [...entry.types.entries()].sort((a, b) => b[1] - a[1])[0][0],
        coverage: coverage(entry.contacts),
      }));
    const fields = [...STANDARD_FIELDS.map((f) => ({ ...f, coverage: total ? 100 : 0 })), ...custom];
    return { fields, count: fields.length };
  },

  /** The most frequent distinct values of a custom field. */
  async values(em: EntityManager, projectId: string, path: string[], limit: number) {
    const rows = await em.execute<Array<{ value: unknown }>>(
      `select c.data #> ?::text[] as value, count(*) as n from contacts c
       where c.project_id = ? and c.data #> ?::text[] is not null
       group by 1 order by n desc, 1 limit ?`,
      [textArrayLiteral(path), projectId, textArrayLiteral(path), limit],
    );
    // jsonb arrives parsed by the driver.
    return rows.map((r) => r.value);
  },

  async countWith(em: EntityManager, projectId: string, path: string[]): Promise<number> {
    const [row] = await em.execute(`select count(*)::int as n from contacts where project_id = ? and data #> ?::text[] is not null`, [
      projectId,
      textArrayLiteral(path),
    ]);
    return row.n;
  },

  /** Removes the field from every contact of the project; returns how many contacts had it. */
  async remove(em: EntityManager, projectId: string, path: string[]): Promise<number> {
    const pathLiteral = textArrayLiteral(path);
    const [row] = await em.execute(
      `with changed as (
         update contacts set data = data #- ?::text[], updated_at = now()
         where project_id = ? and data #> ?::text[] is not null returning 1)
       select count(*)::int as n from changed`,
      [pathLiteral, projectId, pathLiteral],
    );
    return row.n;
  },
};
