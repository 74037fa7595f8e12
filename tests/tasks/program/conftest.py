"""The program-task tests run on the parcel-claims environment: `parcel_env` (the BuiltEnv),
`parcel_bundle` (its folder) and `sandbox` come from tests/fixtures (built once, cached)."""
