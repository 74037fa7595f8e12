"""Dagster assets of the platform: one module per stage, each a short shell around engine code."""

import warnings

# Light import on purpose: `agentomnia status` reads Dagster's storage through this package
# (`agentomnia_assets.status`) without loading Dagster itself.
from dagster_shared.utils.warnings import PreviewWarning

# Partitioned asset checks are a preview feature in Dagster 1.13; the platform relies on them knowingly.
warnings.filterwarnings("ignore", category=PreviewWarning)
