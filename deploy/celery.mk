# Many machines, shown on one: PostgreSQL and Redis from Debian packages on 127.0.0.1, two Celery
# workers, the Dagster daemon and webserver, then one round of seeds -> environments -> DAG tasks
# spread over the workers. Included by the top-level Makefile; uses its $(BIN) and `install`.
# Everything runs from deploy/cluster.py, which tests/distributed drives the same way.

CLUSTER = $(BIN)/python -m deploy.cluster
DISTRIBUTED_WEB_PORT ?= 3001
DISTRIBUTED_ENVIRONMENTS ?= 3

.PHONY: distributed distributed-packages distributed-up distributed-round distributed-status distributed-down

## PostgreSQL, Redis, two Celery workers, daemon and UI; then one round across the workers (the UI stays up)
distributed: distributed-up distributed-round
	@echo "UI on http://127.0.0.1:$(DISTRIBUTED_WEB_PORT); stop everything with: make distributed-down"

# apt-get runs only when a package is missing (it needs root, as CI has)
distributed-packages:
	@if ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && command -v redis-server >/dev/null; then :; else \
	  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends postgresql redis-server; \
	fi

distributed-up: install distributed-packages
	$(CLUSTER) up --web-port $(DISTRIBUTED_WEB_PORT)

distributed-round: install
	$(CLUSTER) round --max-environments $(DISTRIBUTED_ENVIRONMENTS)

distributed-status:
	@$(CLUSTER) status

## stop the deployment (`make distributed-down PURGE=1` also deletes its database and state)
distributed-down:
	$(CLUSTER) down $(if $(PURGE),--purge,)
