"""Solver-task tests use the session's `sandbox` from tests/fixtures (one worker suits the 2-core CI machine)."""
