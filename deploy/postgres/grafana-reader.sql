-- A read-only role for Grafana's PostgreSQL data source (deploy/grafana/provisioning/datasources):
-- Grafana runs whatever SQL a dashboard editor types, so it must not hold the worker's privileges.
-- The role is grafana_reader (psql -v reader=NAME for another), its password $GRAFANA_DB_PASSWORD.
-- docker-compose.yml runs this file once, when the postgres service initialises its data volume
-- (/docker-entrypoint-initdb.d, as the database owner, psql 16). On a volume created before it,
-- run it by hand as the owner of the tables:
--   docker compose exec -e GRAFANA_DB_PASSWORD postgres psql -U quotaledger -d quotaledger -f /docker-entrypoint-initdb.d/10-grafana-reader.sql
\set ON_ERROR_STOP on
\if :{?reader}
\else
  \set reader grafana_reader
\endif
\getenv grafana_password GRAFANA_DB_PASSWORD
\if :{?grafana_password}
  SELECT :'grafana_password' = '' AS empty_password \gset
\else
  \set empty_password true
\endif
\if :empty_password
  DO $$ BEGIN RAISE EXCEPTION 'GRAFANA_DB_PASSWORD is not set: the grafana_reader role needs a password'; END $$;
\endif
SELECT NOT EXISTS (SELECT FROM pg_roles WHERE rolname = :'reader') AS create_role \gset
\if :create_role
  CREATE ROLE :"reader" LOGIN PASSWORD :'grafana_password';
\else
  ALTER ROLE :"reader" LOGIN PASSWORD :'grafana_password';
\endif
GRANT CONNECT ON DATABASE :"DBNAME" TO :"reader";
GRANT USAGE ON SCHEMA public TO :"reader";
-- the tables that exist now, and those this role (the one that runs `quotaledger db upgrade`) creates later
GRANT SELECT ON ALL TABLES IN SCHEMA public TO :"reader";
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT ON TABLES TO :"reader";
