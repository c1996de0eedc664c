-- Mailroom's own database on the PostgreSQL server it shares with Temporal
-- (Temporal's `temporal` and `temporal_visibility` databases are created by the
-- temporal-schema job in docker-compose.yml).
--
-- The postgres image runs this file with psql, as POSTGRES_USER (who therefore owns the
-- database), and only when it initialises an empty data volume. On a volume that
-- already exists, create the database by hand:
--   docker compose exec postgresql sh -c 'createdb -U "$POSTGRES_USER" mailroom'
--
-- Written to be a no-op when the database exists, e.g. when POSTGRES_USER is `mailroom`
-- and the image has already created a database of that name (its POSTGRES_DB default).
-- PostgreSQL has no CREATE DATABASE IF NOT EXISTS; psql's \gexec runs the generated
-- statement only when the SELECT returns a row.
SELECT 'CREATE DATABASE mailroom'
WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = 'mailroom')\gexec
