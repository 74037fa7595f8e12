"""Deployment of the platform's Dagster definitions on many machines: PostgreSQL instance storage,
Celery workers on a Redis broker, and lineage written as Parquet segments to a shared folder."""
