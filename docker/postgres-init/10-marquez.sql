-- Marquez keeps its own database and role in the stack's one PostgreSQL (Airflow uses "airflow").
CREATE ROLE marquez WITH LOGIN PASSWORD 'marquez';
CREATE DATABASE marquez OWNER marquez;
