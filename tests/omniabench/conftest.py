"""Fixtures: the parcel-claims environment and its hand-written tasks, shared with the trajectory tests."""

from __future__ import annotations

from tests.trajectories.conftest import Parcel, parcel, sandbox, tasks

__all__ = ["Parcel", "parcel", "sandbox", "tasks"]
