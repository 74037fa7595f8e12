"""OpenAPI 3.0/3.1 and Swagger 2.0 operations as seed tools, with a small, fast `$ref` resolver.

`operation_tools(doc)` reads every path operation of a parsed document and returns one `SeedTool`
per operation plus the list of repairs it made. Only what the operations reach is resolved (their
parameters, request bodies and success responses); unused components are never walked.

Resolution (`Resolver`):
- local `$ref`s (`#/components/...`, `#/definitions/...`, `#/paths/...`, any JSON pointer into the
  document) are followed and memoised; siblings of a `$ref` (3.1 style `description` overrides)
  are laid over the target;
- a reference met again inside its own expansion is cut into
  `{"type": "object", "description": "recursive reference to <ref>"}`; an expansion is reused
  wherever it comes out the same (the references it cut are open there too, none it expanded is),
  so memoising never changes the result. Dense webs of mutually recursive schemas grow
  exponentially under this rule: past `_MAX_NODES` nodes in one schema, or `_REEXPANSION_BUDGET`
  repeated expansions in the document, recursive references are cut earlier (one repair says so);
- `allOf` is merged into one schema (properties and required united in order, the schema's own
  keywords first, then the first sub-schema that sets a keyword); `anyOf`/`oneOf` stay as declared;
- OpenAPI 3.0 `nullable: true` is translated to JSON Schema (`"type": [X, "null"]`, `null` added to
  an `enum`, `{"type": "null"}` added to a type-less `anyOf`/`oneOf`) and `nullable` is dropped;
  OpenAPI 3.0 and Swagger 2.0 boolean `exclusiveMinimum`/`exclusiveMaximum` become the bound they
  flag (`minimum: 0, exclusiveMinimum: true` is `exclusiveMinimum: 0`), as JSON Schema writes it;
  Swagger 2.0 `type: file` becomes `{"type": "string", "format": "binary"}` (its OpenAPI 3 form);
- an external `$ref` (another file or URL) is not followed: the whole document is rejected
  (`SpecRejected`) with the JSON pointer where it is written.

Repairs (each `{"place": <JSON pointer>, "problem": ..., "fix": ...}`), made instead of rejecting:
- a name listed twice in `required`: kept once;
- tuple-form `items` (a list): one item becomes that item, several become `{"anyOf": [...]}` (every
  listed item shape is still accepted; the position of each is not kept);
- a `default` that its own schema rejects: the default is dropped;
- a `$ref` that points to nothing: replaced by `{}` (any value); a parameter, request body or
  response that is such a `$ref` is left out, the operation is kept;
- a schema that is not an object, or `properties` that is not a mapping: replaced by `{}`/dropped;
- an operationId used twice: the first keeps it, a later one becomes `<operationId>_<method>` (or
  `<operationId>_<n>` when that is taken too);
- a name that is not 1-64 of `[A-Za-z0-9_.-]`: other characters become `_`, cut at 64;
- a parameter listed twice, or without `name`/`in`, or with an unknown `in`: the later one or the
  broken one is left out; a parameter without any schema is typed as a string;
- a body property whose name a parameter already uses: it becomes `body_<name>`;
- a name in a request body's `required` that the body does not define: dropped from `required`;
- an operation that cannot be read at all: skipped.

Tool input schemas are `{"type": "object", "properties": ..., "required": [...]}`: path, query and
formData parameters under their own names (header and cookie parameters are left out), then the
request body: an object body with properties is flattened into top-level properties with its own
required list; any other body is one `body` property. `SeedTool.locations` says where each
property goes on the wire: `path`, `query`, `formData` (Swagger formData parameters, and the
properties of an OpenAPI 3 form-encoded body) or `body`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote

import jsonschema

from agentomnia.seeds.models import SeedTool

HTTP_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
TOOL_NAME = re.compile(r"^[A-Za-z0-9_.\-]{1,64}$")
Repair = dict[str, str]

_MISSING = object()
# how many times one document may expand a reference again (inside recursive structures, where an
# earlier expansion does not fit) before such references are cut early: a dense web of mutually
# recursive schemas would otherwise grow exponentially
_REEXPANSION_BUDGET = 2_000
_MEMO_PER_REF = 8  # expansions kept per reference (one, unless it sits inside recursive structures)
# dict nodes one resolved schema may hold before recursive references in it are cut early
_MAX_NODES = 1_000
_EARLY = "<cut early>"

# keywords whose values are schemas (one, a list, or a name -> schema mapping)
_SCHEMA_ONE = frozenset(
    {
        "items",
        "additionalProperties",
        "not",
        "contains",
        "propertyNames",
        "if",
        "then",
        "else",
        "additionalItems",
        "unevaluatedItems",
        "unevaluatedProperties",
    }
)
_SCHEMA_LIST = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})
_SCHEMA_MAP = frozenset({"properties", "patternProperties", "dependentSchemas"})
# parameter fields that are not part of the parameter's value schema (Swagger 2.0)
_SWAGGER_PARAM_FIELDS = frozenset({"in", "name", "required", "collectionFormat", "allowEmptyValue"})
_FORM_MEDIA = ("application/x-www-form-urlencoded", "multipart/form-data")


class SpecRejected(Exception):
    """The whole document cannot be used; `parse_openapi` turns it into a SeedInputError."""

    def __init__(self, reason: str, *, place: str = "", fix: str = "") -> None:
        super().__init__(reason)
        self.reason, self.place, self.fix = reason, place, fix


class _Deps:
    """What a resolved schema depended on: references it cut (open above it) and ones it expanded."""

    __slots__ = ("cut", "expanded")

    def __init__(self) -> None:
        self.cut: set[str] = set()
        self.expanded: set[str] = set()


class _Skip(Exception):
    """One operation cannot be read; it is skipped with a repair."""

    def __init__(self, problem: str, place: str) -> None:
        super().__init__(problem)
        self.problem, self.place = problem, place


# -- JSON pointers -------------------------------------------------------------------------


def escape_token(token: Any) -> str:
    return str(token).replace("~", "~0").replace("/", "~1")


def pointer(base: str, *tokens: Any) -> str:
    """`base` (a pointer such as `#/paths`) extended by the given reference tokens."""
    return base + "".join("/" + escape_token(t) for t in tokens)


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return "an object" if isinstance(value, Mapping) else type(value).__name__


def sanitize_name(name: str) -> str:
    """A tool name made of 1-64 of `[A-Za-z0-9_.-]`."""
    clean = re.sub(r"[^A-Za-z0-9_.\-]", "_", name)[:64]
    return clean or "tool"


# -- nullable ------------------------------------------------------------------------------


def nullable_to_json_schema(schema: dict[str, Any]) -> None:
    """In place, on a fresh dict: OpenAPI 3.0 `nullable` in JSON-Schema form, `nullable` dropped."""
    if schema.pop("nullable", None) is not True:
        return
    t = schema.get("type")
    if isinstance(t, str):
        schema["type"] = [t, "null"]
    elif isinstance(t, list):
        if "null" not in t:
            schema["type"] = [*t, "null"]
    else:
        for key in ("anyOf", "oneOf"):
            alts = schema.get(key)
            if isinstance(alts, list):
                if not any(isinstance(a, Mapping) and a.get("type") == "null" for a in alts):
                    schema[key] = [*alts, {"type": "null"}]
                break
    enum = schema.get("enum")
    if isinstance(enum, list) and None not in enum:
        schema["enum"] = [*enum, None]


def translate_nullable(schema: Any) -> Any:
    """A copy of a JSON schema with every `nullable` translated; everything else kept as it is.

    Walks only schema positions (properties, items, sub-schemas, `$defs`), never values such as
    `enum`, `default` or `examples`. Used for MCP input schemas.
    """
    if not isinstance(schema, Mapping):
        return schema
    out: dict[str, Any] = {}
    for k, v in schema.items():
        if k in _SCHEMA_ONE and isinstance(v, Mapping):
            out[k] = translate_nullable(v)
        elif (k in _SCHEMA_LIST or k == "items") and isinstance(v, list):
            out[k] = [translate_nullable(s) for s in v]
        elif (k in _SCHEMA_MAP or k in ("$defs", "definitions")) and isinstance(v, Mapping):
            out[k] = {name: translate_nullable(s) for name, s in v.items()}
        else:
            out[k] = v
    if "nullable" in out:
        nullable_to_json_schema(out)
    return out


def inline_local_refs(schema: Any, root: Any = None, _open: frozenset[str] = frozenset()) -> Any:
    """A copy of `schema` with each local `$ref` (`#/$defs/X`, `#/definitions/X`, any `#/...` pointer
    into `root`, default `schema` itself) replaced by what it points to, its sibling keywords kept on
    top. A reference that points nowhere, or back into one being inlined, becomes `{}` (any value).

    For reading a tool's schema piece by piece (a property lifted out of an MCP tool's `outputSchema`
    no longer sits next to the `$defs` its `$ref` names); the seed's own schemas stay as declared.
    """
    base = schema if root is None else root
    if isinstance(schema, list):
        return [inline_local_refs(v, base, _open) for v in schema]
    if not isinstance(schema, Mapping):
        return schema
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#"):
        target: Any = base
        for part in ref[1:].split("/")[1:] if ref != "#" else []:
            key = part.replace("~1", "/").replace("~0", "~")
            target = target.get(key) if isinstance(target, Mapping) else None
        siblings = {k: inline_local_refs(v, base, _open) for k, v in schema.items() if k != "$ref"}
        if not isinstance(target, Mapping) or ref in _open:
            return siblings
        return {**inline_local_refs(target, base, _open | {ref}), **siblings}
    return {
        k: inline_local_refs(v, base, _open)
        for k, v in schema.items()
        if not (k in ("$defs", "definitions") and root is not None)
    }


def _copy(value: Any) -> Any:
    """A deep copy of JSON-like data (resolved schemas share memoised parts; tools must not)."""
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


# -- resolution ----------------------------------------------------------------------------


class Resolver:
    """Resolves schemas and reference objects of one document; collects the repairs it makes."""

    def __init__(self, doc: Mapping[str, Any], *, draft4: bool) -> None:
        self.doc = doc
        self.repairs: list[Repair] = []
        self._repaired: set[tuple[str, str]] = set()
        # ref -> expansions: (references it cut that were open above it, references it expanded,
        # its size in dict nodes, the schema)
        self._memo: dict[str, list[tuple[frozenset[str], frozenset[str], int, Any]]] = {}
        self._stack: list[str] = []
        self._stack_set: set[str] = set()
        self._reexpansions = 0
        self._nodes = 0  # dict nodes in the schema being resolved (see _MAX_NODES)
        self._recursive: set[str] = set()  # references met again inside their own expansion
        self._cut_early_at = ""
        self.draft4 = draft4
        self._validator: Any = jsonschema.Draft4Validator if draft4 else jsonschema.Draft202012Validator

    # repairs

    def repair(self, place: str, problem: str, fix: str) -> None:
        if (place, problem) not in self._repaired:
            self._repaired.add((place, problem))
            self.repairs.append({"place": place, "problem": problem, "fix": fix})

    # references

    def lookup(self, ref: str, place: str) -> Any:
        """The node a local `$ref` names, or `_MISSING`; an external ref rejects the document."""
        if not ref.startswith("#"):
            raise SpecRejected(
                f"external $ref {ref!r} is not followed (seeds must be self-contained)",
                place=place,
                fix="inline the referenced schema under components/schemas (or definitions) and use a local #/ ref",
            )
        if ref == "#":
            return self.doc
        if not ref.startswith("#/"):
            return _MISSING  # a plain-name anchor (`#Pet`): not supported, treated as dangling
        node: Any = self.doc
        for raw in ref[2:].split("/"):
            token = unquote(raw).replace("~1", "/").replace("~0", "~")
            if isinstance(node, Mapping):
                if token in node:
                    node = node[token]
                elif token.lstrip("-").isdigit() and int(token) in node:  # YAML int keys (200:)
                    node = node[int(token)]
                else:
                    return _MISSING
            elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
                node = node[int(token)]
            else:
                return _MISSING
        return node

    def deref(self, node: Any, place: str, what: str) -> tuple[Any, str]:
        """Follow a chain of reference objects (parameters, bodies, responses, path items).

        Returns (target, target's place), or (None, place) with a repair when it dangles or loops.
        Siblings of a `$ref` (3.1 `summary`/`description`) are laid over the target.
        """
        seen: list[str] = []
        siblings: dict[str, Any] = {}
        where = place
        while isinstance(node, Mapping) and "$ref" in node:
            ref = node["$ref"]
            for k, v in node.items():
                if k != "$ref":
                    siblings.setdefault(k, v)
            if not isinstance(ref, str):
                self.repair(
                    where, f"$ref of this {what} is {_kind(ref)}, not a JSON pointer", f"left the {what} out"
                )
                return None, place
            if ref in seen:
                self.repair(place, f"the {what}'s $ref chain loops back to {ref!r}", f"left the {what} out")
                return None, place
            seen.append(ref)
            target = self.lookup(ref, where)
            if target is _MISSING:
                self.repair(where, f"$ref {ref!r} points to nothing in the document", f"left the {what} out")
                return None, place
            node, where = target, ref
        if siblings and isinstance(node, Mapping):
            node = {**node, **siblings}
        return node, where

    # schemas

    def schema(self, node: Any, place: str) -> Any:
        """The resolved schema (never mutate what it returns: memoised parts are shared)."""
        self._nodes = 0
        return self._schema(node, place, _Deps())

    def _schema(self, node: Any, place: str, deps: _Deps) -> Any:
        if isinstance(node, bool):
            return node  # JSON Schema boolean schemas (3.1)
        if not isinstance(node, Mapping):
            self.repair(
                place, f"a schema must be an object, found {_kind(node)}", "replaced it by {} (any value)"
            )
            return {}
        if "$ref" not in node:
            return self._finish(self._build(node, place, deps), place)
        ref = node["$ref"]
        if not isinstance(ref, str):
            self.repair(place, f"$ref is {_kind(ref)}, not a JSON pointer", "replaced it by {} (any value)")
            return {}
        target = self._ref(ref, place, deps)
        siblings = {k: v for k, v in node.items() if k != "$ref"}
        if not siblings:
            return target
        own = self._build(siblings, place, deps)
        merged = {**target, **own} if isinstance(target, Mapping) else own
        return self._finish(merged, place)

    def _ref(self, ref: str, place: str, deps: _Deps) -> Any:
        if ref in self._stack_set:
            deps.cut.add(ref)
            self._recursive.add(ref)
            self._nodes += 1
            return _cut(ref)
        recursive = ref in self._recursive
        # an earlier expansion is reused where it would come out the same: the references it cut
        # are open here too, and none it expanded is (so "cut at the second visit" holds exactly)
        for cut, expanded, size, out in self._memo.get(ref, ()):
            if cut <= self._stack_set and expanded.isdisjoint(self._stack_set):
                if recursive and self._nodes + size > _MAX_NODES:
                    return self._cut_early(ref, place, deps)
                self._nodes += size
                deps.cut |= cut
                deps.expanded |= expanded
                return out
        if recursive and (self._nodes > _MAX_NODES or self._reexpansions > _REEXPANSION_BUDGET):
            return self._cut_early(ref, place, deps)
        target = self.lookup(ref, place)
        if target is _MISSING:
            self.repair(
                place, f"$ref {ref!r} points to nothing in the document", "replaced it by {} (any value)"
            )
            return {}
        if ref in self._memo:
            self._reexpansions += 1  # met before in another recursive context: expanded once more
        inner = _Deps()
        start = self._nodes
        self._stack.append(ref)
        self._stack_set.add(ref)
        try:
            out = self._schema(target, ref, inner)
        finally:
            self._stack.pop()
            self._stack_set.discard(ref)
        inner.cut.discard(ref)
        inner.expanded.add(ref)
        entries = self._memo.setdefault(ref, [])
        if len(entries) < _MEMO_PER_REF:
            entries.append((frozenset(inner.cut), frozenset(inner.expanded), self._nodes - start, out))
        deps.cut |= inner.cut
        deps.expanded |= inner.expanded
        return out

    def _cut_early(self, ref: str, place: str, deps: _Deps) -> dict[str, Any]:
        """A recursive reference cut before its second visit: the schema would grow too large."""
        if not self._cut_early_at:
            self._cut_early_at = place
            self.repair(
                place,
                f"recursive schemas grow past {_MAX_NODES} nodes in one place, or need more than "
                f"{_REEXPANSION_BUDGET} repeated expansions in the document",
                "cut deeper recursive references early, like a reference met a second time "
                "(here and wherever else the limit is reached)",
            )
        deps.cut.add(_EARLY)  # never open: a schema holding such a cut is not reused elsewhere
        self._nodes += 1
        return _cut(ref)

    def _build(self, node: Mapping[str, Any], place: str, deps: _Deps) -> dict[str, Any]:
        """A new dict with every sub-schema resolved; other keywords kept as they are."""
        self._nodes += 1
        out: dict[str, Any] = {}
        for k, v in node.items():
            if k in _SCHEMA_ONE and isinstance(v, Mapping | bool):
                out[k] = self._schema(v, pointer(place, k), deps)
            elif k == "items" and isinstance(v, list):
                subs = [self._schema(s, pointer(place, k, i), deps) for i, s in enumerate(v)]
                if len(subs) == 1:
                    out[k] = subs[0]
                    fix = "used that item schema for every item"
                else:
                    out[k] = {"anyOf": subs}
                    fix = "items accepts any of the listed item schemas (anyOf); their positions are not kept"
                self.repair(pointer(place, k), "items is a list (tuple form), not one schema", fix)
            elif k in _SCHEMA_LIST and isinstance(v, list):
                out[k] = [self._schema(s, pointer(place, k, i), deps) for i, s in enumerate(v)]
            elif k in _SCHEMA_MAP:
                if not isinstance(v, Mapping):
                    self.repair(pointer(place, k), f"{k} must be a mapping, found {_kind(v)}", f"dropped {k}")
                    continue
                out[k] = {str(name): self._schema(s, pointer(place, k, name), deps) for name, s in v.items()}
            else:
                out[k] = v
        return out

    def _exclusive_bounds(self, d: dict[str, Any], place: str) -> None:
        """In place: OpenAPI 3.0's and Swagger's boolean `exclusiveMinimum`/`exclusiveMaximum` (a
        flag on `minimum`/`maximum`) in JSON Schema form, the bound itself (`minimum: 0` with
        `exclusiveMinimum: true` is `exclusiveMinimum: 0`). The same numbers are allowed."""
        for flag, bound in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
            value = d.get(flag)
            if not isinstance(value, bool):
                continue
            if value and isinstance(d.get(bound), (int, float)) and not isinstance(d[bound], bool):
                d[flag] = d.pop(bound)
            else:
                del d[flag]
                if value:
                    self.repair(
                        pointer(place, flag),
                        f"{flag} is true but there is no {bound} for it to make exclusive",
                        f"dropped {flag}",
                    )

    def _finish(self, d: dict[str, Any], place: str) -> dict[str, Any]:
        """allOf merged, nullable translated, required deduplicated, a bad default dropped."""
        if isinstance(d.get("allOf"), list):
            d = _merge_all_of(d)
        if "nullable" in d:
            nullable_to_json_schema(d)
        if self.draft4:
            self._exclusive_bounds(d, place)
        if d.get("type") == "file":  # Swagger 2.0 file upload, as OpenAPI 3 writes it
            d["type"] = "string"
            d.setdefault("format", "binary")
        if "required" in d:
            req = d["required"]
            if isinstance(req, list):
                names = list(dict.fromkeys(str(r) for r in req))
                if len(names) != len(req):
                    twice = sorted({str(r) for r in req if req.count(r) > 1})
                    self.repair(
                        pointer(place, "required"),
                        f"required lists {', '.join(twice)} more than once",
                        "kept each name once",
                    )
                    d["required"] = names
            else:
                self.repair(
                    pointer(place, "required"),
                    f"required must be a list of property names, found {_kind(req)}",
                    "dropped it",
                )
                del d["required"]
        if "default" in d:
            problem = self._default_problem(d)
            if problem:
                self.repair(
                    pointer(place, "default"),
                    f"default {d['default']!r} does not satisfy its schema: {problem}",
                    "dropped the default",
                )
                del d["default"]
        return d

    def _default_problem(self, schema: Mapping[str, Any]) -> str:
        rest = {k: v for k, v in schema.items() if k != "default"}
        try:
            error = jsonschema.exceptions.best_match(self._validator(rest).iter_errors(schema["default"]))
        except Exception:  # jsonschema raises many types for a schema it cannot use: keep the default
            return ""
        return error.message if error is not None else ""


def _cut(ref: str) -> dict[str, Any]:
    return {"type": "object", "description": f"recursive reference to {ref}"}


def _merge_all_of(d: dict[str, Any]) -> dict[str, Any]:
    """One schema from `allOf`: properties and required united, own keywords first."""
    subs = [s for s in d["allOf"] if isinstance(s, Mapping)]
    own = {k: v for k, v in d.items() if k != "allOf"}
    props: dict[str, Any] = {}
    required: list[str] = []
    for part in [*subs, own]:
        sub_props = part.get("properties")
        if isinstance(sub_props, Mapping):
            for name, s in sub_props.items():
                prev = props.get(name)
                props[name] = {**prev, **s} if isinstance(prev, Mapping) and isinstance(s, Mapping) else s
        if isinstance(part.get("required"), list):
            required += [str(r) for r in part["required"]]
    merged = dict(own)
    for sub in subs:
        for k, v in sub.items():
            if k not in ("properties", "required"):
                merged.setdefault(k, v)
    if props:
        merged["properties"] = props
        merged.setdefault("type", "object")
    if required:
        merged["required"] = list(dict.fromkeys(required))
    return merged


# -- operations ----------------------------------------------------------------------------


def operation_tools(doc: Mapping[str, Any], *, version: str) -> tuple[list[SeedTool], list[Repair], int]:
    """(tools, repairs, operations seen). Raises SpecRejected for an external `$ref`."""
    swagger = version == "2.0"
    r = Resolver(doc, draft4=not version.startswith("3.1"))
    tools: list[SeedTool] = []
    taken: dict[str, str] = {}
    seen = 0
    paths = doc.get("paths")
    if paths is not None and not isinstance(paths, Mapping):
        r.repair("#/paths", f"paths must be a mapping, found {_kind(paths)}", "read no operations")
        paths = None
    for path, raw_item in (paths or {}).items():
        item_place = pointer("#/paths", path)
        item, _ = r.deref(raw_item, item_place, "path item")
        if item is None:
            if raw_item is None:
                r.repair(item_place, "the path has nothing under it", "skipped the path")
            continue
        if not isinstance(item, Mapping):
            r.repair(item_place, f"a path item must be an object, found {_kind(item)}", "skipped the path")
            continue
        for method, op in item.items():
            if method not in HTTP_METHODS:
                continue
            seen += 1
            place = pointer(item_place, method)
            try:
                if not isinstance(op, Mapping):
                    raise _Skip(f"the operation must be an object, found {_kind(op)}", place)
                tool = _operation_tool(r, str(path), method, op, item, place, item_place, swagger=swagger)
            except _Skip as exc:
                r.repair(exc.place, exc.problem, "skipped the operation")
                continue
            except (TypeError, AttributeError, KeyError, ValueError, IndexError):
                r.repair(place, "the operation could not be read: a field has an unexpected shape", "skipped the operation")  # fmt: skip
                continue
            name = _unique_name(r, tool.name, method, place, taken)
            tools.append(tool.model_copy(update={"name": name}) if name != tool.name else tool)
    return tools, r.repairs, seen


def _tool_name(r: Resolver, path: str, method: str, op: Mapping[str, Any], place: str) -> str:
    op_id = op.get("operationId")
    if op_id is None or op_id == "":
        name = f"{method}_" + (re.sub(r"[^A-Za-z0-9]+", "_", path).strip("_") or "root")
        if TOOL_NAME.match(name):
            return name
        clean = sanitize_name(name)
        r.repair(place, f"the name made from method and path, {name!r}, is longer than 64 characters", f"named it {clean!r}")  # fmt: skip
        return clean
    if not isinstance(op_id, str):
        op_id = str(op_id)
        r.repair(pointer(place, "operationId"), "operationId is not a string", f"used {op_id!r}")
    if TOOL_NAME.match(op_id):
        return op_id
    clean = sanitize_name(op_id)
    r.repair(
        pointer(place, "operationId"),
        f"operationId {op_id!r} is not 1-64 letters, digits, '_', '.', '-'",
        f"named the tool {clean!r}",
    )
    return clean


def _unique_name(r: Resolver, name: str, method: str, place: str, taken: dict[str, str]) -> str:
    if name not in taken:
        taken[name] = place
        return name
    candidates = [f"{name[: 63 - len(method)]}_{method}"] + [
        f"{name[: 63 - len(str(n))]}_{n}" for n in range(2, len(taken) + 3)
    ]
    new = next(c for c in candidates if c not in taken)
    r.repair(
        pointer(place, "operationId"),
        f"the name {name!r} is already used by the operation at {taken[name]}",
        f"named this one {new!r}",
    )
    taken[new] = place
    return new


def _operation_tool(
    r: Resolver,
    path: str,
    method: str,
    op: Mapping[str, Any],
    item: Mapping[str, Any],
    place: str,
    item_place: str,
    *,
    swagger: bool,
) -> SeedTool:
    name = _tool_name(r, path, method, op, place)
    props: dict[str, Any] = {}
    required: list[str] = []
    locations: dict[str, str] = {}

    def add(pname: str, schema: Any, where: str, is_required: bool) -> None:
        props[pname] = schema
        locations[pname] = where
        if is_required and pname not in required:
            required.append(pname)

    body: tuple[Any, str, bool, str] | None = None  # (schema, place, required, location)
    for (where, pname), (p, pplace) in _parameters(r, item, op, item_place, place).items():
        if where in ("header", "cookie"):
            continue
        if where == "body" and swagger:
            body = (r.schema(p.get("schema", {}), pointer(pplace, "schema")), pointer(pplace, "schema"),
                    p.get("required") is True, "body")  # fmt: skip
            continue
        if where not in ("path", "query") and not (swagger and where == "formData"):
            r.repair(pplace, f"parameter {pname!r} is in {where!r}, which is not a parameter location", "left it out")  # fmt: skip
            continue
        schema = _parameter_schema(r, p, pplace, swagger=swagger)
        if (
            isinstance(p.get("description"), str)
            and isinstance(schema, Mapping)
            and "description" not in schema
        ):
            schema = {**schema, "description": p["description"]}
        key = pname
        if key in props:
            key = _free_name(f"{where}_{pname}", props)
            r.repair(
                pplace,
                f"parameter name {pname!r} is used by another parameter too",
                f"named this one {key!r}",
            )
        add(key, schema, where, p.get("required") is True or where == "path")

    if not swagger and "requestBody" in op:
        body = _request_body(r, op["requestBody"], pointer(place, "requestBody"))
    if body is not None:
        schema, bplace, body_required, location = body
        if _is_flat_object(schema):
            body_props = schema["properties"]
            renamed: dict[str, str] = {}
            for pname, pschema in body_props.items():
                key = pname
                if key in props:
                    key = _free_name(f"body_{pname}", props)
                    r.repair(
                        pointer(bplace, "properties", pname),
                        f"body property {pname!r} has the name of a parameter",
                        f"kept the parameter and named the body property {key!r}",
                    )
                renamed[pname] = key
                add(key, pschema, location, False)
            for req in schema.get("required") or []:
                if req in renamed:
                    if renamed[req] not in required:
                        required.append(renamed[req])
                else:
                    r.repair(
                        pointer(bplace, "required"),
                        f"required names {req!r}, which the body does not define",
                        "dropped it from required",
                    )
        else:
            key = _free_name("body", props)
            if key != "body":
                r.repair(bplace, "the request body would be the property 'body', which a parameter already uses", f"named it {key!r}")  # fmt: skip
            add(key, schema, "body", body_required)

    # `{petId}`, or Express's `/:petId` (a colon inside a segment, `chat:configuration`, names nothing)
    for braced, express in re.findall(r"{([^{}/]+)}|(?<=/):([A-Za-z_][A-Za-z0-9_]*)(?=/|$)", path):
        template = braced or express
        if locations.get(template) != "path":
            if template in props:
                continue  # declared, in another location: left as the spec has it
            named = f"{{{template}}}" if braced else f":{template}"
            r.repair(place, f"the path names {named} but no parameter declares it", f"added {template!r} as a required string path parameter")  # fmt: skip
            add(template, {"type": "string"}, "path", True)

    return SeedTool(
        name=name,
        description=str(op.get("summary") or op.get("description") or f"{method.upper()} {path}"),
        input_schema=_copy({"type": "object", "properties": props, "required": required}),
        output_schema=_copy(_success_schema(r, op, place, swagger=swagger)),
        read_only=method in ("get", "head", "options"),
        destructive=method == "delete",
        method=method.upper(),
        path=path,
        place=place,
        locations=locations,
    )


def _free_name(name: str, used: Mapping[str, Any]) -> str:
    if name not in used:
        return name
    return next(f"{name}_{n}" for n in range(2, len(used) + 3) if f"{name}_{n}" not in used)


def _parameters(
    r: Resolver, item: Mapping[str, Any], op: Mapping[str, Any], item_place: str, place: str
) -> dict[tuple[str, str], tuple[Mapping[str, Any], str]]:
    """(in, name) -> (parameter, its place): path-item parameters, overridden by the operation's."""
    out: dict[tuple[str, str], tuple[Mapping[str, Any], str]] = {}
    for listing, lplace in ((item.get("parameters"), pointer(item_place, "parameters")),
                            (op.get("parameters"), pointer(place, "parameters"))):  # fmt: skip
        if listing is None:
            continue
        if not isinstance(listing, list):
            r.repair(
                lplace, f"parameters must be a list, found {_kind(listing)}", "read no parameters from it"
            )
            continue
        here: set[tuple[str, str]] = set()
        for i, raw in enumerate(listing):
            p, pplace = r.deref(raw, pointer(lplace, i), "parameter")
            if p is None:
                continue
            if (
                not isinstance(p, Mapping)
                or not isinstance(p.get("name"), str)
                or not isinstance(p.get("in"), str)
            ):
                r.repair(pplace, "a parameter needs a name and an in (both strings)", "left it out")
                continue
            key = (p["in"], p["name"])
            if key in here:
                r.repair(pplace, f"parameter {p['name']!r} in {p['in']} is listed twice", "kept the first")
                continue
            here.add(key)
            out[key] = (p, pplace)
    return out


def _parameter_schema(r: Resolver, p: Mapping[str, Any], pplace: str, *, swagger: bool) -> Any:
    if swagger:
        raw = {k: v for k, v in p.items() if k not in _SWAGGER_PARAM_FIELDS and k != "description"}
        if not raw:
            r.repair(pplace, f"parameter {p['name']!r} declares no type", "typed it as a string")
            return {"type": "string"}
        return r.schema(raw, pplace)
    if "schema" in p:
        return r.schema(p["schema"], pointer(pplace, "schema"))
    content = p.get("content")
    if isinstance(content, Mapping) and content:
        media = _pick_media(content)
        mt = content[media]
        if isinstance(mt, Mapping) and "schema" in mt:
            return r.schema(mt["schema"], pointer(pplace, "content", media, "schema"))
    r.repair(pplace, f"parameter {p['name']!r} declares no schema", "typed it as a string")
    return {"type": "string"}


def _pick_media(content: Mapping[str, Any]) -> str:
    keys = [str(k) for k in content]
    for want in ("application/json",):
        if want in content:
            return want
    for k in keys:
        if "json" in k:
            return k
    for want in _FORM_MEDIA:
        if want in content:
            return want
    return next((k for k in keys if isinstance(content[k], Mapping) and "schema" in content[k]), keys[0])


def _request_body(r: Resolver, raw: Any, place: str) -> tuple[Any, str, bool, str] | None:
    rb, rb_place = r.deref(raw, place, "request body")
    if rb is None:
        return None
    if not isinstance(rb, Mapping):
        r.repair(rb_place, f"a request body must be an object, found {_kind(rb)}", "left the body out")
        return None
    content = rb.get("content")
    if not isinstance(content, Mapping) or not content:
        r.repair(rb_place, "the request body has no content", "left the body out")
        return None
    media = _pick_media(content)
    mt = content[media]
    splace = pointer(rb_place, "content", media, "schema")
    schema = r.schema(mt["schema"], splace) if isinstance(mt, Mapping) and "schema" in mt else {}
    location = "formData" if media in _FORM_MEDIA else "body"
    return schema, splace, rb.get("required") is True, location


def _is_flat_object(schema: Any) -> bool:
    if not isinstance(schema, Mapping):
        return False
    props = schema.get("properties")
    if not isinstance(props, Mapping) or not props:
        return False
    if any(k in schema for k in ("oneOf", "anyOf")):
        return False
    t = schema.get("type", "object")
    return t == "object" or (isinstance(t, list) and "object" in t)


def _success_schema(
    r: Resolver, op: Mapping[str, Any], place: str, *, swagger: bool
) -> dict[str, Any] | None:
    responses = op.get("responses")
    if not isinstance(responses, Mapping):
        return None
    for code, raw in sorted(responses.items(), key=lambda kv: str(kv[0])):
        if not str(code).startswith("2"):
            continue
        rplace = pointer(place, "responses", code)
        resp, rplace = r.deref(raw, rplace, "response")
        if not isinstance(resp, Mapping):
            continue
        if swagger:
            if "schema" not in resp:
                continue
            schema = r.schema(resp["schema"], pointer(rplace, "schema"))
        else:
            content = resp.get("content")
            if not isinstance(content, Mapping) or not content:
                continue
            media = _pick_media(content)
            mt = content[media]
            if not isinstance(mt, Mapping) or "schema" not in mt:
                continue
            schema = r.schema(mt["schema"], pointer(rplace, "content", media, "schema"))
        if isinstance(schema, Mapping):
            return dict(schema)
    return None
