"""Bundles: loading, saving, class detection, tool normalisation and the shipped fixtures."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentomnia.sandbox import Bundle, fixture_bundle
from agentomnia.sandbox.bundle import detect_class_name
from agentomnia.sandbox.fixtures.generate import record_count, shop_s0


def test_shop_fixture_is_realistic(shop: Bundle) -> None:
    assert shop.class_name == "TrailheadShop"
    assert len(shop.tools) >= 20
    assert 200 <= record_count(shop.s0) <= 400
    assert len([k for k in shop.s0 if k != "counters"]) == 10
    assert {"get_order", "list_products"} <= shop.read_tools
    assert "create_order" not in shop.read_tools


def test_shipped_s0_matches_its_generator(shop: Bundle) -> None:
    assert shop.s0 == shop_s0()


def test_save_and_load_round_trip(tmp_path: Path, mock: Bundle) -> None:
    changed = mock.model_copy(update={"init_mode": "attributes", "returns": "any"})
    folder = changed.save(tmp_path / "copy")
    again = Bundle.load(folder)
    assert again.key == changed.key
    assert again.s0 == mock.s0
    assert json.loads((folder / "runtime.json").read_text())["init_mode"] == "attributes"


def test_from_source_detects_the_class_and_normalises_tools() -> None:
    source = "class Helper:\n    pass\n\nclass Env:\n    def ping(self):\n        return 1\n"
    bundle = Bundle.from_source(source, [{"name": "ping", "parameters": {"type": "object"}}], {})
    assert bundle.class_name == "Env"
    assert bundle.tools[0]["type"] == "function"
    assert bundle.tools[0]["function"]["name"] == "ping"


def test_class_detection_prefers_the_class_defining_the_tools() -> None:
    source = (
        "class Env:\n    def ping(self):\n        pass\n\nclass Record:\n    def other(self):\n        pass\n"
    )
    assert detect_class_name(source, ["ping"]) == "Env"
    with pytest.raises(ValueError, match="no top-level class"):
        detect_class_name("x = 1\n")


def test_bad_bundles_are_refused_with_a_reason(tmp_path: Path, tool: Callable[..., dict[str, Any]]) -> None:
    with pytest.raises(FileNotFoundError, match="env.py"):
        Bundle.load(tmp_path)
    with pytest.raises(ValueError, match="declared twice"):
        Bundle.from_source("class E:\n    pass\n", [tool("a"), tool("a")], {})
    with pytest.raises(ValueError, match="no function name"):
        Bundle.from_source("class E:\n    pass\n", [{"type": "function", "function": {}}], {})


def test_key_changes_with_code_but_not_with_s0(mock: Bundle) -> None:
    assert mock.model_copy(update={"s0": {}}).key == mock.key
    assert mock.model_copy(update={"returns": "any"}).key != mock.key
    assert Bundle.from_source(mock.source + "\n# edit\n", mock.tools, mock.s0).key != mock.key


def test_fixture_lookup_rejects_unknown_names() -> None:
    with pytest.raises(ValueError, match="available"):
        fixture_bundle("nope")  # type: ignore[arg-type]
