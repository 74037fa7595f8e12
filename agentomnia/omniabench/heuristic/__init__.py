"""A model-free baseline policy: a request read clause by clause, tools chosen by overlap and embedding.

A benchmark is only informative if a policy with no understanding scores low on it for visible
reasons, while tasks whose every record is named outright stay within its reach. This policy sees
exactly what a model sees (the messages and the tool schemas, never the task's ground truth) and acts
by rules a reader can check:

- Clauses: the request is cut into sentences (quoted strings are masked first, so a period inside a
  quoted value never ends one). A sentence that says what to do in a recognisable form ("Create a X
  with a: ...; b 1.5", "Reassign X so its A is Y", "Point the A of X to Y", "Mark X as V",
  "Change the F to V of X", "Remove X", or an imperative tool verb such as "Approve claim CLA-1")
  becomes one write step; a sentence listing `"field": description` pairs asks for a JSON answer,
  and so does a sentence that names one field in double quotes and describes it in its other words
  ("Tell me how many claims shipment SH2-003 has as "claims""; "how many Xs R has" reads as "the
  number of Xs of R", "R's A" as "the A of R").
- Tools: for each step, write tools are scored by how many of the clause's named fields they take
  as parameters, whether they take the record the clause is about (its id prefix), whether their name
  carries the clause's verb or target state, and the embedding similarity of their text to the clause.
- Values: literals are typed by the JSON schema (numbers, booleans from yes/no, enum values, quoted
  strings); references are resolved through the observations: an id spelled out, "the new X" (the
  record an earlier step created), "the A of R" (field A of record R, read with R's get tool), "the X
  named 'N'" (a find tool). Writes run in request order.
- Answers: a requested field is read from a tool result: "the number of Xs of R / with A V / matching
  'q' / whose A is V / linked to R" (a list, search, summary or overview call), "the A of R" (a
  record field). Requests without a JSON spec fall back to one aimed read and answer the field names
  the request uses ("claim count", "total amount") from the observations.

What it cannot do is the point: it never asks the user, so a withheld detail stays missing; a record
named only by description ("the only plan matching 'X'", "the loan with the latest due date") is left
alone; it computes nothing (no checks, sums or differences of reported values); it checks no
constraint before writing. The final message names each step and field it skipped and why.

- `parser`: the request cut into clauses (write steps, answer fields, references)
- `tools`: the tool index (schemas read as reads, writes and record keys; tool texts embedded)
- `values`: value filling (observations, argument candidates, answers read from results)
- `agent`: `HeuristicAgent`, the policy that runs the plan; `words`: the shared vocabulary
"""

from __future__ import annotations

from agentomnia.omniabench.heuristic.agent import (
    FILLED_BONUS,
    MIN_SCORE,
    RELATIVE_SCORE,
    HeuristicAgent,
    Memory,
)
from agentomnia.omniabench.heuristic.parser import (
    AnswerField,
    Plan,
    Ref,
    Step,
    mask_quotes,
    parse_ref,
    parse_request,
    unmask,
)
from agentomnia.omniabench.heuristic.tools import Entity, ToolIndex, ToolView, id_prefixes, tool_views
from agentomnia.omniabench.heuristic.values import (
    Filled,
    Observation,
    Seen,
    build_answer,
    candidates,
    field_names,
    fill,
    key_variants,
    observations,
    resolve_field,
    signature,
    text_candidates,
)
from agentomnia.omniabench.heuristic.words import (
    CREATE_VERBS,
    DELETE_VERBS,
    READ_VERBS,
    STOPWORDS,
    name_words,
    same_stem,
    singular,
    verb_named,
    words_of,
)

__all__ = [
    "AnswerField",
    "CREATE_VERBS",
    "DELETE_VERBS",
    "Entity",
    "FILLED_BONUS",
    "Filled",
    "HeuristicAgent",
    "MIN_SCORE",
    "Memory",
    "Observation",
    "Plan",
    "READ_VERBS",
    "RELATIVE_SCORE",
    "Ref",
    "STOPWORDS",
    "Seen",
    "Step",
    "ToolIndex",
    "ToolView",
    "build_answer",
    "candidates",
    "field_names",
    "fill",
    "id_prefixes",
    "key_variants",
    "mask_quotes",
    "name_words",
    "observations",
    "parse_ref",
    "parse_request",
    "resolve_field",
    "same_stem",
    "signature",
    "singular",
    "text_candidates",
    "tool_views",
    "unmask",
    "verb_named",
    "words_of",
]
