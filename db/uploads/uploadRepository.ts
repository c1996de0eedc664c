import type { EntityManager } from '@mikro-orm/postgresql';

export interface UploadRecord {
  id: string;
  projectId: string;
  key: string;
  contentType: string;
  size: number;
  width: number;
  height: number;
  createdAt: Date;
}

const columns = `id, project_id as "projectId", key, content_type as "contentType", size, width, height, created_at as "createdAt"`;

/** The uploads table: one row per stored image, written only after its file is in the store. */
export const uploadRepository = {
  async insert(em: EntityManager, upload: Omit<UploadRecord, 'createdAt'>): Promise<UploadRecord> {
    const [row] = await em.execute(
      `insert into uploads (id, project_id, key, content_type, size, width, height) values (?, ?, ?, ?, ?, ?, ?) returning ${columns}`,
      [upload.id, upload.projectId, upload.key, upload.contentType, upload.size, upload.width, upload.height],
    );
    return toRecord(row);
  },

  /** Served without authentication, so looked up by id alone (ids are random UUIDs). */
  async find(em: EntityManager, id: string): Promise<UploadRecord | null> {
    const rows = await em.execute(`select ${columns} from uploads where id = ?`, [id]);
    return rows.length ? toRecord(rows[0]) : null;
  },

  /** Store keys of every upload of the project (to remove the files once the project is gone). */
  async keysOfProject(em: EntityManager, projectId: string): Promise<string[]> {
    const rows = await em.execute(`select key from uploads where project_id = ?`, [projectId]);
    return rows.map((r) => String(r.key));
  },
};

// The driver hands timestamps over as text.
const toRecord = (row: Record<string, unknown>): UploadRecord => ({ ...(row as unknown as UploadRecord), createdAt: new Date(row.createdAt as string) });
