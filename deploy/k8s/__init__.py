"""Deployment on Kubernetes: the code location for the Dagster Helm chart (k8s_job.py), its values
file, and the step-per-pod executor."""
