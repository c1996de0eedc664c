import { Migration } from '@mikro-orm/migrations';

/**
 * The request log (GET /requests): a project's recent API requests, written in batches off the
 * request path (services/requestLog/requestLogWriter.ts) and removed by the hourly cleanup after
 * REQUEST_LOG_RETENTION_DAYS. A bigint identity, not a uuid: rows are many, small and only ever
 * read newest first by project. A project's deletion takes its rows with it.
 */
export class Migration20261127210000RequestLog extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table api_requests (
        id bigint generated always as identity primary key,
        project_id uuid not null references projects (id) on delete cascade,
        created_at timestamptz not null,
        method text not null,
        path text not null,
        route text,
        status smallint not null,
        duration_ms real not null,
        auth text not null check (auth in ('secret', 'public', 'session')),
        request_id text not null
      );
      create index api_requests_project_created_index on api_requests (project_id, created_at desc, id desc);
      create index api_requests_created_index on api_requests (created_at);
    `);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists api_requests;`);
  }
}
