"""The kinds vocabulary: the shipped file reads clean, a broken one is refused item by item with the fix,
and the most telling kind wins."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from agentomnia.taxonomy.kinds import (
    SLOTS,
    kind_values,
    kinds_path,
    load_kinds,
    paired_values,
    read_kinds,
    slots,
)


def test_the_shipped_kinds_read_clean_and_use_only_known_slots() -> None:
    kinds, problems = read_kinds(kinds_path())
    assert problems == [] and len(kinds) == len(load_kinds()) >= 60
    assert all(slots(v) <= SLOTS for k in kinds for v in k.values)
    done = subprocess.run([sys.executable, "-m", "agentomnia.taxonomy.kinds"], capture_output=True, text=True)
    assert done.returncode == 0 and "no problems" in done.stdout


def test_a_broken_kinds_file_names_each_bad_item_and_the_fix(tmp_path: Path) -> None:
    bad = tmp_path / "kinds.yaml"
    bad.write_text(
        "- field: channel\n  values: [Email, Phone]\n"  # too few
        "- field: name\n  entity: '(freezer'\n  values: [a, b, c, d, e, f]\n"  # not a regex
        "- field: name\n  values: ['{nickname} x', b, c, d, e, f]\n  colour: red\n"  # unknown slot and key
        "- values: [a]\n",  # no field
        encoding="utf-8",
    )
    kinds, problems = read_kinds(bad)
    text = "\n".join(problems)
    assert "item 1 (channel): 2 distinct values; give 6-40" in text
    assert "item 2 (name): `entity` is not a regex" in text
    assert "item 3 (name): unknown keys ['colour']" in text and "unknown slots ['nickname']" in text
    assert "item 4: needs `field`" in text
    assert [k.field.pattern for k in kinds] == ["channel", "name", "name"]
    (tmp_path / "broken.yaml").write_text("- field: [unclosed\n", encoding="utf-8")
    _, problems = read_kinds(tmp_path / "broken.yaml")
    assert problems and "line 1" in problems[0] and "fix the syntax" in problems[0]
    done = subprocess.run(
        [sys.executable, "-m", "agentomnia.taxonomy.kinds", str(bad)], capture_output=True, text=True
    )
    assert done.returncode == 1 and "item 4" in done.stdout


def test_a_kind_bound_to_a_domain_or_entity_wins_and_stays_at_home() -> None:
    chat, vet = 30000, 20146  # Email Communication > Client Follow-up Emails; Pet Services > Veterinarian
    assert "Email" in kind_values("channel", "follow_up", chat)
    assert "Rabies" in kind_values("vaccine", "pet", vet)
    assert "Rabies" not in kind_values("vaccine", "pet", None)
    garage = 20134  # Automotive > After-sales Service
    assert kind_values("cause", "repair_order.lines", garage) and not kind_values("cause", "incident", garage)
    assert not kind_values("cause", "repair_order.lines", chat)  # a fault of a car, not of a mail server
    assert not kind_values("no_such_field", "anything", None)


def test_paired_kinds_must_line_up_and_a_record_gets_the_correction_for_its_cause(tmp_path: Path) -> None:
    six = "[a, b, c, d, e, f]"
    bad = tmp_path / "kinds.yaml"
    bad.write_text(
        f"- field: cause\n  values: {six}\n"
        "- field: fix\n  pairs: cause\n  values: [A, B, C, D, E, F, G]\n"  # one more than its leader
        f"- field: remedy\n  pairs: reason\n  values: {six}\n"  # no item has that field
        "- field: repair\n  pairs: cause\n  values: [A, A, C, D, E, F]\n",  # a repeat would shift the pairing
        encoding="utf-8",
    )
    _, problems = read_kinds(bad)
    text = "\n".join(problems)
    assert "(fix) pairs with 'cause': give 6 values without slots" in text
    assert "(remedy) pairs with 'reason': no item has that `field`" in text
    assert "item 4 (repair): a paired item's values must not repeat" in text

    # the shipped repair lines: whatever cause a line was given, its correction is the one for it
    causes = kind_values("cause", "repair_order.lines", 20134)
    fixes = kind_values("correction", "repair_order.lines", 20134)
    assert paired_values()[fixes] == causes
    from agentomnia.envs.spec import AttributeSpec, EntitySpec, EnvSpec
    from agentomnia.envs.state import generate_state
    from agentomnia.taxonomy import Coordinate

    lines = AttributeSpec(name="lines", type="list", declared={"type": "array", "minItems": 2, "items": {
        "type": "object", "required": ["cause", "correction"],
        "properties": {"cause": {"type": "string"}, "correction": {"type": "string"}}}})  # fmt: skip
    order = EntitySpec(name="repair_order", table="repair_orders", description="A repair order.", key="ro_id",
                       attributes=(AttributeSpec(name="ro_id", type="str"), lines), id_prefix="RO")  # fmt: skip
    spec = EnvSpec(
        name="garage", class_name="GarageEnv", description="A dealer's service department.",
        coordinate=Coordinate.for_domain(20134, ["tool_use"], ["tool_parameter_grounding"]), candidate_id="c",
        seed_ids=("s",), entities=(order,), relations=(), rules=(),
    )  # fmt: skip
    said = [
        (line["cause"], line["correction"])
        for record in generate_state(spec, seed=3)["repair_orders"].values()
        for line in record["lines"]
    ]
    assert len(said) >= 12 and all(c in causes and f in fixes for c, f in said)
    assert all(fixes.index(f) == causes.index(c) for c, f in said)
