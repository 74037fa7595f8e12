"""Dagster assets of the platform: one module per stage, each a short shell around engine code."""

import warnings

from dagster import PreviewWarning

# Partitioned asset checks are a preview feature in Dagster 1.13; the platform relies on them knowingly.
warnings.filterwarnings("ignore", category=PreviewWarning)
