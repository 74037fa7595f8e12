"""Random but plausible tool calls for any bundle, generated from its schemas and initial state.

The conformance checker, the determinism tests and the benchmark all need call sequences for
environments nobody wrote calls for. Arguments are drawn from the tool's JSON schema; string
parameters prefer values that exist in the initial state (a `customer_id` is drawn from the ids of
the `customers` table, a `code` from values stored under `code`), so most calls reach the
environment's real logic instead of failing on unknown ids. A small share of calls is deliberately
invalid to exercise the error paths.
"""

from __future__ import annotations

import random
import string
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from agentomnia.sandbox.bundle import Bundle

_WORDS = [
    "alpha",
    "ridge",
    "summit",
    "please",
    "broken zipper",
    "late delivery",
    "gift",
    "blue",
    "north",
    "refund",
]


class ArgumentSampler:
    """Draws arguments for a bundle's tools; deterministic for a given seed."""

    def __init__(
        self, bundle: Bundle, init_config: Mapping[str, Any] | None = None, *, seed: int = 0
    ) -> None:
        self.bundle = bundle
        self.rng = random.Random(seed)
        self.by_key: dict[str, list[Any]] = defaultdict(list)
        self.tables: dict[str, list[str]] = {}
        config = dict(bundle.s0 if init_config is None else init_config)
        for name, value in config.items():
            if isinstance(value, dict) and value and all(isinstance(v, dict) for v in value.values()):
                self.tables[name] = sorted(str(k) for k in value)
            elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
                ids = [v.get("id") or v.get(f"{name.rstrip('s')}_id") for v in value]
                self.tables[name] = sorted(str(i) for i in ids if i is not None)
            self._harvest(value, name)
        for values in self.by_key.values():
            unique = sorted({repr(v): v for v in values}.items())
            values[:] = [v for _, v in unique]
        self.schemas = {t["function"]["name"]: t["function"]["parameters"] for t in bundle.tools}

    def _harvest(self, value: Any, key: str) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                self._harvest(v, str(k))
        elif isinstance(value, list):
            for item in value:
                self._harvest(item, key)
        elif (
            isinstance(value, str | int | float)
            and not isinstance(value, bool)
            and len(self.by_key[key]) < 400
        ):
            self.by_key[key].append(value)

    def calls(
        self, count: int, *, read_weight: float = 1.0, invalid_rate: float = 0.05
    ) -> list[tuple[str, dict[str, Any]]]:
        names = list(self.schemas)
        weights = [read_weight if name in self.bundle.read_tools else 1.0 for name in names]
        out = []
        for _ in range(count):
            name = self.rng.choices(names, weights)[0]
            out.append((name, self.arguments(name, invalid=self.rng.random() < invalid_rate)))
        return out

    def arguments(self, tool: str, *, invalid: bool = False) -> dict[str, Any]:
        schema = self.schemas[tool]
        args = self._object(schema)
        if invalid:
            required = list(schema.get("required", []))
            if required and self.rng.random() < 0.5:
                args.pop(self.rng.choice(required), None)
            else:
                args[self.rng.choice(sorted(args) or ["unexpected"])] = {"not": "valid"}
        return args

    def _object(self, schema: Mapping[str, Any]) -> dict[str, Any]:
        properties = schema.get("properties", {}) or {}
        required = set(schema.get("required", []) or [])
        out: dict[str, Any] = {}
        for name, sub in properties.items():
            if name in required or self.rng.random() < 0.3:
                out[name] = self.value(name, sub if isinstance(sub, Mapping) else {})
        return out

    def value(self, name: str, schema: Mapping[str, Any]) -> Any:
        if "enum" in schema and schema["enum"]:
            return self.rng.choice(list(schema["enum"]))
        if "const" in schema:
            return schema["const"]
        kind = schema.get("type", "string")
        if isinstance(kind, list):
            kind = next((k for k in kind if k != "null"), "string")
        if kind == "integer":
            low = int(schema.get("minimum", 1))
            high = int(schema.get("maximum", max(low, 5)))
            known = [v for v in self.by_key.get(name, []) if isinstance(v, int) and low <= v <= high]
            return (
                self.rng.choice(known)
                if known and self.rng.random() < 0.5
                else self.rng.randint(low, min(high, low + 9))
            )
        if kind == "number":
            floor = float(schema.get("minimum", schema.get("exclusiveMinimum", 0)))
            ceiling = float(schema.get("maximum", floor + 200))
            return round(self.rng.uniform(max(floor, 0.01), ceiling), 2)
        if kind == "boolean":
            return self.rng.random() < 0.5
        if kind == "array":
            items = schema.get("items", {}) or {}
            size = self.rng.randint(int(schema.get("minItems", 1)), min(int(schema.get("maxItems", 3)), 3))
            return [self.value(name.rstrip("s"), items) for _ in range(size)]
        if kind == "object":
            return self._object(schema)
        return self._string(name, schema)

    def _string(self, name: str, schema: Mapping[str, Any]) -> str:
        known = [v for v in self.by_key.get(name, []) if isinstance(v, str)]
        if not known and name.endswith("_id"):
            stem = name[:-3]
            for table, ids in self.tables.items():
                if table.startswith(stem):
                    known = ids
                    break
        if known and self.rng.random() < 0.9:
            return str(self.rng.choice(known))
        low = int(schema.get("minLength", 1))
        word = (
            self.rng.choice(_WORDS)
            if self.rng.random() < 0.7
            else "".join(self.rng.choices(string.ascii_lowercase, k=6))
        )
        high = schema.get("maxLength")
        if high is not None:
            word = word[: int(high)]
        return word.ljust(low, "x")
