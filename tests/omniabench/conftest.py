"""The benchmark tests use `parcel`, `sandbox` and `tasks` (the parcel environment's hand-written
tasks) from tests/fixtures."""
