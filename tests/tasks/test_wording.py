"""Wording metrics and request voices: each number moves the way its definition says."""

from __future__ import annotations

import random

from agentomnia.tasks.wording import (
    chained_of,
    missing_values,
    names_a_person,
    opening,
    query_metrics,
    sentences,
)


def test_a_clause_with_three_of_the_is_a_chain_and_a_comma_breaks_it() -> None:
    chain = "Give the amount of the invoice of the vendor of the order named 'Blue'."
    assert chained_of(chain) == 3
    assert chained_of("The name of the vendor, the date of the order, and the end of the day.") == 1
    m = query_metrics([chain + " Thanks."])
    assert m["sentences"] == 2 and m["chained_of_sentences"] == 1 and m["chained_of_share"] == 0.5


def test_sentences_split_at_ends_not_at_decimals_or_inside_words() -> None:
    text = "Set the limit to 324.65 today. Then tell me the total! Is it 'A.B'? Done."
    assert sentences(text) == [
        "Set the limit to 324.65 today.",
        "Then tell me the total!",
        "Is it 'A.B'?",
        "Done.",
    ]


def test_mean_sentence_words_counts_words_per_sentence() -> None:
    m = query_metrics(["One two three. Four five six seven eight nine ten."])
    assert m["mean_sentence_words"] == 5.0 and m["max_sentence_words"] == 7


def test_repeated_queries_lower_the_distinct_trigram_share() -> None:
    q = "please mark the order as shipped today"
    varied = query_metrics([q, "could you cancel my last booking for friday"])
    repeated = query_metrics([q, q])
    assert varied["distinct_trigram_share"] == 1.0
    assert repeated["distinct_trigram_share"] == 0.5
    assert repeated["trigrams"] == 10 and repeated["distinct_trigrams"] == 5


def test_trigrams_never_span_two_queries() -> None:
    assert query_metrics(["a b", "c d"])["trigrams"] == 0


def test_no_queries_gives_zeros() -> None:
    m = query_metrics([])
    assert m["queries"] == 0 and m["mean_sentence_words"] == 0.0 and m["distinct_trigram_share"] == 0.0


def test_openings_speak_in_the_splits_voice_and_follow_the_seed() -> None:
    consumer = {opening(random.Random(i), "toc", "Music Playback") for i in range(40)}
    business = {opening(random.Random(i), "tob", "Music Playback") for i in range(40)}
    assert len(consumer) >= 3 and not consumer & business
    assert all("music playback" in o for o in consumer | business)
    assert any(" my " in f" {o} " for o in consumer)
    assert opening(random.Random(7), "toe", "Payroll") == opening(random.Random(7), "toe", "Payroll")


def test_a_job_named_by_its_field_is_not_said_as_a_person() -> None:
    """ "As a game operations" is not English: a title that names a field opens as someone working in it."""
    assert (
        names_a_person("Pharmacist")
        and names_a_person("Event Planner")
        and names_a_person("Director/Producer")
    )
    assert names_a_person("Architect") and names_a_person("Security Guard")
    assert not names_a_person("Game Operations") and not names_a_person("Property Management")
    assert not names_a_person("Cybersecurity")
    for i in range(30):
        field = opening(random.Random(i), "tob", "Game Operations")
        assert "game operations" in field and " a game operations" not in field and " an game" not in field
        cleanup = opening(random.Random(i), "tob", "Property Management", indirect=True)
        assert "property management" in cleanup and " a property management" not in cleanup


def test_a_possessive_stacked_on_a_possessive_is_counted_once_per_sentence() -> None:
    from agentomnia.tasks.wording import stacked_possessive

    assert stacked_possessive("Pull up that cash count's store's customer returns.")
    assert stacked_possessive("Could you find out that store task's assigned to's hourly wage?")
    assert not stacked_possessive("Pull up the customer returns for that cash count's store.")
    # a comma ends the clause: two owners side by side are not a chain
    assert not stacked_possessive("Set the order's status, and the customer's email, as agreed.")
    m = query_metrics(["Look at that order's customer's invoices. Then close that order's ticket."])
    assert m["stacked_possessive_sentences"] == 1 and m["stacked_possessive_share"] == 0.5


def test_a_list_of_what_a_record_points_at_says_the_same_not_a_chain() -> None:
    from agentomnia.tasks.dag.generate import _alongside

    # the list filters by the link the phrase names: said as the records "for" that link
    assert (
        _alongside("that cash count's store", "store", "customer returns")
        == "the customer returns for that cash count's store"
    )
    # another link (audit events by actor, reached through "approved by"): the chain stays, as it is
    # true, said with "of" rather than a second possessive
    assert _alongside("that baseline's approved by", "actor", "audit events") == (
        "the audit events of that baseline's approved by"
    )
    # an owner that is itself a chain or a description is not a handle to compare with
    assert _alongside("the store of the only cash count", "store", "employees") == (
        "the employees of the store of the only cash count"
    )


def test_a_noun_with_no_plural_is_counted_in_records() -> None:
    from agentomnia.tasks.dag.describe import plural, singular

    assert plural("playback_progress") == "playback progress records"  # not "playback progresses"
    assert plural("equipment") == "equipment records"
    assert [plural(n) for n in ("order", "category", "sales", "stock")] == [
        "orders",
        "categories",
        "sales",
        "stocks",
    ]
    # a request says "how many diagnoses", not "diagnosises"; codes keep their capitals
    assert [plural(n) for n in ("diagnosis", "evaluation_criterion", "shelf", "aircraft", "sla_policy")] == [
        "diagnoses",
        "evaluation criteria",
        "shelves",
        "aircraft",
        "SLA policies",
    ]
    # and back, for the teacher's "to find the lease whose ..." (not "the leas whose ...")
    assert [singular(t) for t in ("leases", "maintenance_requests", "analyses", "statuses", "data")] == [
        "lease",
        "maintenance_request",
        "analysis",
        "status",
        "data",
    ]


def test_a_rewording_that_drops_what_the_task_rests_on_is_caught() -> None:
    request = (
        'Passing on a note from the dispatcher: Matthew, Mindy and Courtney sent prices for 6 deliveries. '
        'Morris-Smith ships 1,200 units at $4.50 each. Tell me "total_cost" as JSON.'
    )  # fmt: skip
    assert missing_values(request, request) == []
    # a reordering, a new opening and "1200" for "1,200" lose nothing
    same = (
        'Hi! Matthew, Mindy and Courtney have quoted 6 deliveries, per the dispatcher. At $4.50 a unit, '
        'Morris-Smith ships 1200 of them. What is "total_cost"? Answer in JSON.'
    )  # fmt: skip
    assert missing_values(request, same) == []
    lost = 'Matthew and Mindy sent prices for some deliveries; Morris-Smith ships 1,200 units at $4.50. Give "cost" as JSON.'
    assert missing_values(request, lost) == ["6", "total_cost", "Courtney"]


def test_a_request_reads_as_one_person_wrote_it_from_its_first_sentence_to_its_format() -> None:
    """One member of a staff ("a housekeeping staff member", never "a housekeeping staff"), no
    "Also" on the first thing asked, and a single answer key is never returned "together"."""
    from agentomnia.envs.spec import EnvSpec
    from agentomnia.tasks.dag.generate import Generated
    from agentomnia.tasks.dag.phrasing import _FORMAT, answer_format
    from agentomnia.tasks.dag.profiles import STANDARD
    from agentomnia.tasks.dag.synth import _compose
    from agentomnia.taxonomy.coordinate import Coordinate

    for seed in range(40):
        said = opening(random.Random(seed), "tob", "Housekeeping Staff")
        assert "staff member" in said and "a housekeeping staff " not in said.replace("staff member", ""), (
            said
        )
    for i in range(len(_FORMAT)):  # no format sentence says "together": one key or several
        assert "together" not in answer_format(_Fixed(i), ["name"])  # type: ignore[arg-type]
    spec = EnvSpec.model_construct(coordinate=Coordinate.model_construct(split="toc", l2="Laundry Services"))
    out = Generated(clauses=['Also check the name of stop STO-001 and give it as "name".'])
    text = _compose(spec, out, STANDARD, random.Random(0))
    assert " Check the name of stop STO-001" in text and "Also" not in text, text


class _Fixed(random.Random):
    """A random source whose every choice is the same index."""

    def __init__(self, index: int) -> None:
        super().__init__(0)
        self.index = index

    def randrange(self, *args: object, **kwargs: object) -> int:  # type: ignore[override]
        return self.index


def test_records_found_by_a_reference_in_a_role_are_named_by_the_role() -> None:
    """list_employees(manager_id=...) reads "the employees whose manager is ...", not "the employees
    of that leave application's employee" (which says nothing of who reports to whom)."""
    from agentomnia.envs.spec import AttributeSpec, EntitySpec
    from agentomnia.tasks.dag.generate import in_role

    employee = EntitySpec(
        name="employee", table="employees", description="", key="employee_id", id_prefix="EMP",
        attributes=(AttributeSpec(name="employee_id", type="str"), AttributeSpec(name="manager_id", type="ref", ref="employee"),
                    AttributeSpec(name="store_id", type="ref", ref="store")),
    )  # fmt: skip
    assert in_role(employee, "manager_id", "that leave application's employee") == (
        "the employees whose manager is that leave application's employee"
    )
    assert in_role(employee, "store_id", "the store named 'Oak'") is None  # "the employees of the store ..."
    member = EntitySpec(
        name="team_member", table="team_members", description="", key="team_member_id", id_prefix="TEA",
        attributes=(AttributeSpec(name="team_member_id", type="str"), AttributeSpec(name="team_id", type="ref", ref="group_team")),
    )  # fmt: skip
    assert in_role(member, "team_id", "that group team") is None  # its own kind, said short


def test_standard_and_challenge_rewrites_are_asked_apart() -> None:
    """A Challenge request is rewritten under its own request name and told to keep its references
    indirect; a Standard one is told to stay direct."""
    from agentomnia.llm.protocol import LLMResponse
    from agentomnia.tasks.wording import rephrase

    asked: list[tuple[str, str]] = []

    class Model:
        model = "stub"

        def complete(self, messages: list[dict[str, str]], **kw: object) -> LLMResponse:
            asked.append((str(kw["schema_name"]), messages[0]["content"]))
            return LLMResponse(text="", data={"query": "Could you close it?"}, request_hash="h")

    assert (
        rephrase(Model(), "Close the ticket of the customer named 'Ada'.", indirect=True)
        == "Could you close it?"
    )
    rephrase(Model(), "Close ticket TIC-004.")
    assert [name for name, _ in asked] == ["task_description_challenge", "task_description"]
    assert "Keep every such reference indirect" in asked[0][1] and "indirect" not in asked[1][1]
