"""AgentOmnia engine: plain typed Python, no Dagster imports.

Seeds become verified, stateful tool environments; environments become verified tasks and
trajectories; those train agents; OmniaBench failures become PRDs that steer the next round.
"""

__version__ = "0.1.0"
