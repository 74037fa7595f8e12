"""The Dagster code location: every asset, check, job, schedule, sensor and resource of the platform."""

from __future__ import annotations

from dagster import Definitions, load_asset_checks_from_modules, load_assets_from_modules

from agentomnia_assets import (
    environments,
    evolution,
    omniabench,
    scale,
    seeds,
    tasks,
    taxonomy,
    training,
    trajectories,
)
from jobs import ALL_JOBS, ALL_SCHEDULES
from resources import default_resources
from sensors import ALL_SENSORS

STAGE_MODULES = [taxonomy, evolution, seeds, environments, tasks, omniabench, trajectories, training, scale]

defs = Definitions(
    assets=load_assets_from_modules(STAGE_MODULES),
    asset_checks=load_asset_checks_from_modules(STAGE_MODULES),
    jobs=ALL_JOBS,
    schedules=ALL_SCHEDULES,
    sensors=ALL_SENSORS,
    resources=default_resources(),
)
