"""Sensors of the self-evolution loop (the OmniaBench failure sensor and the PRD inbox sensor).

They arrive with the evaluation and evolution stages; until then the platform has none.
"""

from __future__ import annotations

from dagster import SensorDefinition

ALL_SENSORS: list[SensorDefinition] = []
