"""Broker and result backend of every Celery worker, read from the environment.

`celery -A dagster_celery.app worker` imports a module of this name when it is on PYTHONPATH
(deploy/cluster.py puts this folder there), so the workers and the executor in
deploy/celery_job.py take the same two URLs from the same two variables.
"""

import os

broker_url = os.environ.get("AGENTOMNIA_CELERY_BROKER", "redis://127.0.0.1:6379/0")
result_backend = os.environ.get("AGENTOMNIA_CELERY_BACKEND", "redis://127.0.0.1:6379/1")
# one step at a time per worker process: a step is minutes of CPU, not milliseconds
worker_prefetch_multiplier = 1
broker_connection_retry_on_startup = True
# A step's message is acknowledged only once the step has run, and a worker process that dies mid-step
# (an out-of-memory kill, a lost host) hands it back to the queue instead of failing it: another worker
# runs the step again from its inputs, which earlier steps wrote whole.
task_acks_late = True
task_reject_on_worker_lost = True
