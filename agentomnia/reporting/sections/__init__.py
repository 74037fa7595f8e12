"""The page's sections in the order they appear: (id, title, builder). A builder reads the round and
fills its section; one that raises costs only its own section."""

from __future__ import annotations

from collections.abc import Callable

from agentomnia.reporting.model import Section
from agentomnia.reporting.reader import RoundReader
from agentomnia.reporting.sections.benchmark import benchmark, learning
from agentomnia.reporting.sections.evolution import alignment, prds
from agentomnia.reporting.sections.llm import model_use
from agentomnia.reporting.sections.pipeline import environments, overview, realism, tasks, taxonomy
from agentomnia.reporting.sections.runs import training, trajectories

Builder = Callable[[RoundReader, Section], None]

SECTIONS: tuple[tuple[str, str, Builder], ...] = (
    ("overview", "Pipeline at a glance", overview),
    ("taxonomy", "Taxonomy coverage", taxonomy),
    ("environments", "Environments", environments),
    ("tasks", "Tasks", tasks),
    ("realism", "Realism of worlds, tools and requests", realism),
    ("trajectories", "Trajectories", trajectories),
    ("training", "Training", training),
    ("benchmark", "OmniaBench", benchmark),
    ("learning", "What the agent learned", learning),
    ("prds", "Diagnosis and PRDs", prds),
    ("alignment", "PRD alignment", alignment),
    ("llm", "Model use per stage", model_use),
)

__all__ = ["SECTIONS", "Builder"]
