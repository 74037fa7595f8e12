"""What an HTTP operation does, read from its method and path (REST semantics).

`GET /pets/{petId}` looks one pet up by its key; `GET /pets` lists pets, its query parameters
filtering them; `POST /pets` creates one, the server setting its id; `PUT`/`PATCH` on an item
update it, `DELETE` removes it; `/users/{user_id}/playlists` is a sub-collection whose records
point at their parent; a trailing verb (`/pet/{petId}/uploadImage`, `/pet/findByStatus`) is an
action on the item or collection before it. Version segments (`v1`, `2010-04-01`) and format
suffixes (`Messages.json`) are not resources.

The environment builder uses this before any naming heuristic, for every seed tool that carries an
HTTP method and path; MCP tools, which have neither, are read from their names and schemas.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict

from agentomnia.envs import naming
from agentomnia.envs.naming import snake
from agentomnia.envs.spec import ToolOp
from agentomnia.seeds.inference import singular
from agentomnia.seeds.models import SeedTool

_VERSION = re.compile(r"^(v\d+([._]\d+)*|\d{4}-\d{2}-\d{2}|\d+(\.\d+)*|api|rest|latest)$", re.IGNORECASE)
_PARAM = re.compile(r"^(?:\{([^}]+)\}|:([A-Za-z_][A-Za-z0-9_]*))$")  # `{petId}`, or Express's `:petId`
_SUFFIX = re.compile(r"\.(json|xml|yaml|csv)$", re.IGNORECASE)
ACTION_VERBS = frozenset(
    [
        *naming.CREATE_VERBS, *naming.UPDATE_VERBS, *naming.DELETE_VERBS, *naming.READ_VERBS,
        *naming.LIST_VERBS, *naming.ASSIGN_VERBS, *naming.AGG_VERBS,
        *(v for v in naming.TRANSITION_VERBS if "_" not in v),
        "login", "logout", "upload", "download", "send", "test", "validate", "preview", "run", "execute",
        "sync", "import", "copy", "move", "clone", "share", "invite", "follow", "unfollow", "subscribe",
        "unsubscribe", "reorder", "shuffle", "destroy", "batch", "bulk", "count", "stats", "verify", "redeem", "rotate",
    ]
)  # fmt: skip


_SEARCH_WORDS = frozenset({"search", "query", "find", "lookup", "filter"})
# plural nouns that name one record of settings, not a collection
_SETTINGS_NOUNS = frozenset({"settings", "preferences", "controls", "details", "credentials", "options"})


class Resource(BaseModel):
    """The entity an operation acts on, what it does to it, and which parameters name records."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    entity: str
    op: ToolOp | None  # None: the method and path say nothing certain (kept, with a generic behaviour)
    key_param: str | None = None  # the parameter holding the entity's id
    parent: tuple[str, str] | None = None  # (parent entity, the parameter holding its id)
    action: str | None = None  # a trailing verb segment (uploadImage, cancel)
    # `PUT /accounts/{n}/autopay`, `DELETE /assets/{tag}/assignment`: the one record a parent holds
    # at a path without an id of its own, written or removed through the parent's id
    singleton: bool = False


def _words(segment: str) -> list[str]:
    return [w for w in snake(segment).split("_") if w]


def _is_action(segment: str) -> bool:
    """A trailing verb segment (`cancel`, `uploadImage`), not a kebab-case collection whose first word
    happens to be a verb too (`change-orders`, `follow-ups`, `share-links`)."""
    words = _words(segment)
    if len(words) > 1 and "-" in segment and words[-1].endswith("s"):
        return False
    return bool(words) and words[0] in ACTION_VERBS


def entity_name(segment: str) -> str:
    """`PhoneNumbers` -> phone_number, `pets` -> pet, `Messages.json` -> message."""
    words = _words(_SUFFIX.sub("", segment))
    if not words:
        return "record"
    last = words[-1]
    if len(words) > 1 and len(last) == 3 and last.endswith("s") and not last.endswith(("ss", "us", "is")):
        last = last[:-1]  # `follow-ups`, `add-ons`: a short last word is plural all the same
    return "_".join([*words[:-1], singular(last)])


def _steps(path: str) -> list[tuple[str | None, str | None]]:
    """(literal, id parameter after it) per resource step: `/a/{x}/b` -> [(a, x), (b, None)]."""
    steps: list[tuple[str | None, str | None]] = []
    for raw in path.split("/"):
        # `destroy{mediaTypeExtension}`, `profiles.{format}`: a parameter glued to a word is a format
        # suffix, not a record's id
        seg = _SUFFIX.sub("", raw.strip())
        lead = re.match(r"^\{[^}]+\}", seg)
        seg = lead.group(0) if lead else re.sub(r"\.?\{[^}]*\}", "", seg)
        if not seg or _VERSION.match(seg):
            continue
        param = _PARAM.match(seg)
        if param:
            name = param.group(1) or param.group(2)
            if steps and steps[-1][1] is None and steps[-1][0] is not None:
                steps[-1] = (steps[-1][0], name)
            else:
                steps.append((None, name))
        else:
            steps.append((seg, None))
    return steps


def _body_key(props: dict[str, Any], entity: str) -> str | None:
    """A parameter that names the record a collection-level write changes (`PUT /pet` with `id`)."""
    for p in props:
        if snake(p) in ("id", f"{entity}_id", "sid", "uuid", "key"):
            return p
    return None


def http_resource(tool: SeedTool) -> Resource | None:
    """The resource of an OpenAPI operation, or None for a tool without method and path."""
    if not tool.method or not tool.path:
        return None
    method = tool.method.upper()
    steps = _steps(tool.path)
    action: str | None = None
    if (
        len(steps) > 1
        and steps[-1][0] is not None
        and steps[-1][1] is None
        and _is_action(steps[-1][0] or "")
    ):
        action = steps.pop()[0]
    named = [s for s in steps if s[0] is not None]
    searches = bool(set(_words(tool.name)) & _SEARCH_WORDS)
    if not named:  # `/` or `/{dataset}/{version}`: the operation's own name says what it is about
        nouns = [w for w in _words(tool.name) if w not in ACTION_VERBS and w not in _SEARCH_WORDS]
        entity = entity_name("_".join(nouns) or tool.name)
        if method in ("GET", "HEAD") or searches:
            return Resource(entity=entity, op="list")
        return Resource(entity=entity, op=None)
    last = len(steps) - 1
    while steps[last][0] is None and last > 0:
        last -= 1
    literal, key = steps[last]
    entity = entity_name(literal or tool.name)
    parent = None
    for lit, param in reversed(steps[:last]):
        if lit is not None and param is not None:
            parent = (entity_name(lit), param)
            break
    props = dict(tool.input_schema.get("properties") or {})
    if key is None and method in ("PUT", "PATCH", "DELETE"):
        key = _body_key(props, entity)
    op: ToolOp | None
    if action is not None:
        verb = _words(action)[0]
        if verb in naming.DELETE_VERBS and key:
            op = "delete"
        elif method in ("GET", "HEAD"):
            op = "get" if key and verb not in naming.LIST_VERBS else "list"
        elif key:
            op = "transition" if verb in naming.TRANSITION_VERBS else "update"
        else:
            op = "create" if verb in naming.CREATE_VERBS else None
    elif method in ("GET", "HEAD"):
        op = "get" if key else "list"
    elif method == "POST" and searches and not key:
        op = "list"  # a search sent as POST (a query in the body) reads
    elif method == "POST":
        op = "update" if key else "create"
    elif method in ("PUT", "PATCH"):
        op = "update" if key else None
    elif method == "DELETE":
        op = "delete" if key else None
    else:
        op = None
    # the parent's own record at the path's end, named in the singular or as a set of settings
    # (`/profiles/{id}/parental-controls`), never a sub-collection (`PUT /playlists/{id}/tracks`)
    words = _words(_SUFFIX.sub("", literal or ""))
    singleton = (
        op is None and action is None and parent is not None and last == len(steps) - 1 and key is None
        and method in ("PUT", "PATCH", "DELETE") and bool(words)
        and (singular(words[-1]) == words[-1] or words[-1] in _SETTINGS_NOUNS)
    )  # fmt: skip
    return Resource(entity=entity, op=op, key_param=key, parent=parent, action=action, singleton=singleton)
