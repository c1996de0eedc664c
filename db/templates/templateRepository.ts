import type { EntityManager } from '@mikro-orm/postgresql';
import { copyName } from '../../lib/copyName';
import { likeContains } from '../contacts/contactQueries';
import { queryRows, type TimestampText } from '../sql/rows';

export const TEMPLATE_TYPES = ['TRANSACTIONAL', 'MARKETING', 'HEADLESS'] as const;
export type TemplateType = (typeof TEMPLATE_TYPES)[number];

export const TEMPLATE_SORTS = ['name', 'createdAt', 'updatedAt'] as const;
export type TemplateSort = (typeof TEMPLATE_SORTS)[number];

export interface TemplateRow {
  id: string;
  projectId: string;
  name: string;
  description: string | null;
  subject: string;
  body: string;
  from: string;
  fromName: string | null;
  replyTo: string | null;
  type: TemplateType;
  createdAt: Date;
  updatedAt: Date;
}

/** The writable fields, as the API validated them. */
export interface TemplateFields {
  name: string;
  description: string | null;
  subject: string;
  body: string;
  from: string;
  fromName: string | null;
  replyTo: string | null;
  type: TemplateType;
}

export interface TemplateListQuery {
  page: number;
  pageSize: number;
  type?: TemplateType;
  search?: string;
  sort: TemplateSort;
  dir: 'asc' | 'desc';
}

/** A `templates` row as a statement returns it. */
interface TemplateTableRow {
  id: string;
  project_id: string;
  name: string;
  description: string | null;
  subject: string;
  body: string;
  from_address: string;
  from_name: string | null;
  reply_to: string | null;
  type: TemplateType;
  created_at: TimestampText;
  updated_at: TimestampText;
}

function toTemplate(row: TemplateTableRow): TemplateRow {
  return {
    id: row.id,
    projectId: row.project_id,
    name: row.name,
    description: row.description,
    subject: row.subject,
    body: row.body,
    from: row.from_address,
    fromName: row.from_name,
    replyTo: row.reply_to,
    type: row.type,
    createdAt: new Date(row.created_at),
    updatedAt: new Date(row.updated_at),
  };
}

const columns: Record<keyof TemplateFields, string> = {
  name: 'name',
  description: 'description',
  subject: 'subject',
  body: 'body',
  from: 'from_address',
  fromName: 'from_name',
  replyTo: 'reply_to',
  type: 'type',
};

// Names sort as a person reads a list: case does not split "apple" from "Banana".
const sortExpression: Record<TemplateSort, string> = { name: 'lower(name)', createdAt: 'created_at', updatedAt: 'updated_at' };

export const templateRepository = {
  async create(em: EntityManager, projectId: string, fields: TemplateFields): Promise<TemplateRow> {
    const rows = await queryRows<TemplateTableRow>(
      em,
      `insert into templates (project_id, name, description, subject, body, from_address, from_name, reply_to, type)
       values (?, ?, ?, ?, ?, ?, ?, ?, ?)
       returning *`,
      [projectId, fields.name, fields.description, fields.subject, fields.body, fields.from, fields.fromName, fields.replyTo, fields.type],
    );
    return toTemplate(rows[0]);
  },

  /** Null for a missing template and for another project's: the two are not told apart. */
  async findById(em: EntityManager, projectId: string, id: string): Promise<TemplateRow | null> {
    const rows = await queryRows<TemplateTableRow>(em, `select * from templates where project_id = ? and id = ?`, [projectId, id]);
    return rows.length ? toTemplate(rows[0]) : null;
  },

  /** Sets the given fields only. Null when the template does not exist (in this project). */
  async update(em: EntityManager, projectId: string, id: string, changes: Partial<TemplateFields>): Promise<TemplateRow | null> {
    const entries = (Object.keys(columns) as Array<keyof TemplateFields>).filter((key) => changes[key] !== undefined);
    if (!entries.length) return this.findById(em, projectId, id);
    const rows = await queryRows<TemplateTableRow>(
      em,
      `update templates set ${entries.map((key) => `${columns[key]} = ?`).join(', ')}, updated_at = now()
       where project_id = ? and id = ?
       returning *`,
      [...entries.map((key) => changes[key]), projectId, id],
    );
    return rows.length ? toTemplate(rows[0]) : null;
  },

  async delete(em: EntityManager, projectId: string, id: string): Promise<boolean> {
    const rows = await em.execute(`delete from templates where project_id = ? and id = ? returning id`, [projectId, id]);
    return rows.length > 0;
  },

  /** A copy of every field, its name followed by " (copy)". Null when the original does not exist. */
  async duplicate(em: EntityManager, projectId: string, id: string, maxNameLength: number): Promise<TemplateRow | null> {
    const original = await this.findById(em, projectId, id);
    if (!original) return null;
    const rows = await queryRows<TemplateTableRow>(
      em,
      `insert into templates (project_id, name, description, subject, body, from_address, from_name, reply_to, type)
       select project_id, ?, description, subject, body, from_address, from_name, reply_to, type
       from templates where project_id = ? and id = ?
       returning *`,
      [copyName(original.name, maxNameLength), projectId, id],
    );
    // Deleted between the two statements: as missing as if it had gone before.
    return rows.length ? toTemplate(rows[0]) : null;
  },

  /**
   * One offset page and the number of matches. Search is a case-insensitive substring match on
   * name, description or subject; the order always ends with id, so pages never overlap or skip.
   */
  async list(em: EntityManager, projectId: string, q: TemplateListQuery): Promise<{ templates: TemplateRow[]; total: number }> {
    const where = ['project_id = ?'];
    const params: unknown[] = [projectId];
    if (q.type) {
      where.push('type = ?');
      params.push(q.type);
    }
    if (q.search) {
      const pattern = likeContains(q.search);
      where.push(`(name ilike ? or description ilike ? or subject ilike ?)`);
      params.push(pattern, pattern, pattern);
    }
    const filter = where.join(' and ');
    const dir = q.dir === 'asc' ? 'asc' : 'desc';
    const rows = await queryRows<TemplateTableRow>(
      em,
      `select * from templates where ${filter}
       order by ${sortExpression[q.sort]} ${dir}, id ${dir}
       limit ? offset ?`,
      [...params, q.pageSize, (q.page - 1) * q.pageSize],
    );
    const [count] = await queryRows<{ n: number }>(em, `select count(*)::int as n from templates where ${filter}`, params);
    return { templates: rows.map(toTemplate), total: count.n };
  },
};
