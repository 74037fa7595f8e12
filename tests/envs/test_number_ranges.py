"""The range a number is drawn from by its name alone (`values.number_range`) is one a reader believes:
a lens's f-number, a process capability index or a workshop's labour rate, not the generic 0.5-500."""

import random
import re

import pytest

from agentomnia.envs.values import int_hint, number_range, schema_value

PLAUSIBLE = [
    # (name, lowest and highest a value may be, decimals at most)
    ("bathrooms", 1, 4, 0),
    ("cpk", 0.5, 3, 2),
    ("aperture", 1.4, 22, 1),
    ("iso", 50, 12800, 0),
    ("perceived_effort", 1, 10, 0),
    ("sets", 1, 8, 0),
    ("reps", 1, 30, 0),
    ("price_per_kwh", 0.05, 1.0, 2),
    ("idle_fee_per_min", 0.05, 2.0, 2),
    ("wind_speed_kmh", 0, 120, 1),
    ("yield_t_per_ha", 0.5, 20, 2),
    ("expected_yield_t_per_ha", 0.5, 20, 2),
    ("odometer_km", 1000, 400000, 0),
    ("mileage_in", 1000, 400000, 0),
    ("mileage_out", 1000, 400000, 0),
    ("labor_rate", 50, 300, 2),
    ("width_cm", 5, 150, 1),
    ("extensions_used", 0, 3, 0),
    ("dose_mg_per_kg", 0.05, 60, 2),
    ("capacity_pallets", 10, 5000, 0),
    ("hours_since_overhaul", 50, 50000, 1),
    ("flight_hours", 50, 80000, 1),
    ("flight_cycles", 50, 80000, 0),
    ("storage_used_mb", 1, 1000000, 1),
    ("daily_rate", 20, 500, 2),
    ("rate_per_km", 0.1, 1.0, 2),
    ("delivery_fee", 0, 20, 2),
    ("tip_amount", 0, 50, 2),
    ("square_feet", 200, 5000, 0),
    ("duration_min", 5, 240, 0),
    ("attempt_number", 1, 10, 0),
    ("page", 1, 1000, 0),
    ("error_budget_remaining_pct", 0, 100, 1),
]


@pytest.mark.parametrize(("name", "low", "high", "decimals"), PLAUSIBLE)
def test_a_named_number_is_drawn_from_a_plausible_range(
    name: str, low: float, high: float, decimals: int
) -> None:
    found = number_range(name)
    assert found is not None, f"{name}: no range, so the generic 0.5-500 draw"
    lo, hi, dec = found
    assert low <= lo <= hi <= high, f"{name}: {lo}-{hi} is not within {low}-{high}"
    assert dec <= decimals, f"{name}: {dec} decimals"
    if decimals == 0 and name != "page":  # an integer of the name keeps to it too (a page is a list's)
        rng = random.Random(7)
        assert all(low <= int_hint(name, rng) <= high for _ in range(50))


KEPT = [
    # names the tables handled before: their ranges stay as they were
    ("unit_price", (4, 900, 2)),
    ("heart_rate", (58, 125, 0)),
    ("total_hours", (8, 48, 1)),
    ("hours", (0.5, 12, 1)),
    ("distance_km", (1, 850, 1)),
    ("temperature_c", (-5, 38, 1)),
    ("age", (18, 84, 0)),
    ("patient_age", (18, 84, 0)),
    ("quantity", (1, 48, 0)),
    ("monthly_fee", (4, 900, 2)),
    ("tax_rate", (0.02, 0.98, 3)),
    ("discount_pct", (0, 100, 1)),
    ("salary", (32000, 185000, 0)),
    ("price_cents", (400, 90000, 0)),
]


@pytest.mark.parametrize(("name", "expected"), KEPT)
def test_a_name_already_handled_keeps_its_range(name: str, expected: tuple[float, float, int]) -> None:
    assert number_range(name) == expected


@pytest.mark.parametrize(
    ("name", "letters_of"),
    # names that only hold a pattern's letters: a square foot is no fee, an attempt no temperature, a
    # page, an average or a wage no age, a duration no ratio, a cost per hectare no yield
    [
        ("square_feet", (4, 900, 2)),
        ("attempt_number", (-5, 38, 1)),
        ("page", (18, 84, 0)),
        ("csat_average", (18, 84, 0)),
        ("hourly_wage", (18, 84, 0)),
        ("duration_s", (0.02, 0.98, 3)),
        ("duration_days", (0.02, 0.98, 3)),
        ("lease_cost_per_ha", (1, 15, 2)),
        ("coverage", (0, 150, 2)),
    ],
)
def test_a_pattern_matches_a_word_not_letters_inside_one(
    name: str, letters_of: tuple[float, float, int]
) -> None:
    assert number_range(name) != letters_of


@pytest.mark.parametrize(
    ("name", "pattern"),
    [
        ("amount", r"^-?\d+(\.\d{1,2})?$"),
        ("unit_price", r"^[0-9]+\.[0-9]{2}$"),
        ("weight_kg", r"^\d+(\.\d+)?$"),
    ],
)
def test_a_number_held_as_text_is_on_its_names_scale(name: str, pattern: str) -> None:
    """A seed that keeps an amount as a string of digits gets an amount ("129.50"), not what its
    pattern alone would make ("-0258.9"); a code of digits stays the pattern's."""
    found = number_range(name)
    assert found is not None
    rng = random.Random(3)
    for _ in range(20):
        text = schema_value({"type": "string", "pattern": pattern}, rng, name=name)
        assert re.search(pattern, text)
        assert found[0] <= float(text) <= found[1], text
        assert not text.startswith(("0", "-")) or text.startswith("0."), text
    codes = {
        schema_value({"type": "string", "pattern": r"^\d{5}$"}, rng, name="postal_code") for _ in range(20)
    }
    assert all(len(c) == 5 for c in codes) and len(codes) > 10
