"""External PRDs: requirement documents people drop into `$AGENTOMNIA_HOME/prd_inbox/`.

Stakeholders steer synthesis the same way diagnosis does, by writing a PRD (Markdown with front
matter, or plain YAML; see `examples/`). Each file is parsed and validated on its own against the
PRD protocol and the taxonomy; a malformed file becomes a `Rejection` that names the file, every
problem and its fix, and never costs a well-formed neighbour its place.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from agentomnia.config import home
from agentomnia.evolution.prd import PRD, PRDFormatError, PRDProblem, parse_prd
from agentomnia.rejection import Rejection

INBOX_DIRNAME = "prd_inbox"
INBOX_SUFFIXES = (".md", ".yaml", ".yml")
MAX_PRD_BYTES = 1_000_000


def inbox_dir() -> Path:
    """`$AGENTOMNIA_HOME/prd_inbox/` (not created: an absent inbox simply holds no PRDs)."""
    return home() / INBOX_DIRNAME


def example_prd_path() -> Path:
    """The example PRD shipped with the package: a template for people writing their own."""
    return Path(str(resources.files("agentomnia.evolution") / "examples" / "tool-grounding-pet-services.md"))


def _rejection(path: Path, source: str, problems: list[PRDProblem]) -> Rejection:
    """A PRD file that could not be used, with every problem found in it (`detail["problems"]`)."""
    return Rejection(subject=str(path), subject_kind="prd", stage="inbox", reason="; ".join(str(p) for p in problems),
                     fix="correct the file and put it back in the inbox",
                     detail={"source": source, "problems": [p.model_dump(mode="json") for p in problems]})  # fmt: skip


def read_prd_file(path: Path) -> PRD | Rejection:
    """One file as a PRD, or as the rejection that says what to fix."""
    source = f"external:{path.name}"
    try:
        size = path.stat().st_size
        if size > MAX_PRD_BYTES:
            return _rejection(
                path,
                source,
                [
                    PRDProblem(
                        field="<file>",
                        problem=f"file is {size:,} bytes; a PRD is at most {MAX_PRD_BYTES:,}",
                        fix="move bulky material (logs, trajectories) out and cite it in Extra Information",
                    )
                ],
            )
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        return _rejection(
            path,
            source,
            [PRDProblem(field="<file>", problem=f"not UTF-8 ({exc.reason})", fix="save the file as UTF-8")],
        )
    except OSError as exc:
        return _rejection(
            path,
            source,
            [
                PRDProblem(
                    field="<file>", problem=f"cannot read: {exc.strerror or exc}", fix="check permissions"
                )
            ],
        )
    try:
        return parse_prd(text, source)
    except PRDFormatError as exc:
        return _rejection(path, source, list(exc.problems))


def read_inbox(folder: Path | None = None) -> tuple[list[PRD], list[Rejection]]:
    """Every *.md, *.yaml and *.yml file directly in `folder` (default: the inbox), in name order.

    A file whose prd_id an earlier file (in name order) already used is rejected, so two people
    cannot silently overwrite each other's PRD. Other files (README.txt, editor backups) are ignored.
    """
    folder = folder if folder is not None else inbox_dir()
    if not folder.is_dir():
        return [], []
    prds: list[PRD] = []
    rejections: list[Rejection] = []
    owners: dict[str, Path] = {}
    for path in sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in INBOX_SUFFIXES):
        if path.name.startswith("."):
            continue
        outcome = read_prd_file(path)
        if isinstance(outcome, Rejection):
            rejections.append(outcome)
            continue
        owner = owners.get(outcome.prd_id)
        if owner is not None:
            problem = PRDProblem(
                field="prd_id",
                problem=f"prd_id {outcome.prd_id!r} is already used by {owner.name}",
                fix="give each PRD its own prd_id, or delete the older file",
            )
            rejections.append(_rejection(path, outcome.source, [problem]))
            continue
        owners[outcome.prd_id] = path
        prds.append(outcome)
    return prds, rejections
