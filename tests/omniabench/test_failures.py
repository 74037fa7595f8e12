"""Failure tags on hand-built results: each rule fires on its own evidence and names it."""

from __future__ import annotations

from agentomnia.omniabench.failures import failures_of, program_calls, tag_failure
from agentomnia.omniabench.models import FAILURE_TAGS, FieldDiff
from agentomnia.tasks.models import Task
from tests.fixtures.benchmark import S0, TOOLS, Run, approve_task, result_of

TASK = approve_task()
LISTING = {"items": [S0["claims"]["CLA-001"], S0["claims"]["CLA-002"]]}
UNMET = FieldDiff(
    table="claims", key="CLA-001", field="status", initial="open", expected="approved", actual="open"
)
STRAY = FieldDiff(
    table="claims", key="CLA-002", field="status", initial="open", expected="open", actual="rejected"
)


def _listed() -> Run:
    return Run(TASK.query).call("list_claims", {"shipment_id": "SHP-001"}, data=LISTING)


def _tags(run: Run, **kw) -> dict[str, str]:  # type: ignore[no-untyped-def]
    failure = tag_failure(result_of(TASK, run, **kw), TASK, tools=TOOLS)
    assert failure.tags and len(failure.tags) == len(failure.evidence)
    assert set(failure.tags) <= set(FAILURE_TAGS)
    return dict(zip(failure.tags, failure.evidence, strict=True))


def test_no_action() -> None:
    tags = _tags(Run(TASK.query).say("I cannot do that."), diff=(UNMET,))
    assert "no_action" in tags and "no tool was called" in tags["no_action"]
    assert list(tags)[0] == "no_action"  # the most decisive tag leads


def test_no_action_names_a_policy_error() -> None:
    tags = _tags(Run(TASK.query), stop="error", error="ValueError: policy bug")
    assert "policy bug" in tags["no_action"]


def test_wrong_tool_unknown_name() -> None:
    run = _listed().call("approve", {"claim_id": "CLA-001"}, ok=False, valid=False,
                         error=("unknown_tool", "tool `approve` does not exist"))  # fmt: skip
    assert "step 1 called `approve`" in _tags(run, diff=(UNMET,))["wrong_tool"]


def test_a_reply_written_where_a_tool_name_goes_is_quoted_on_one_line() -> None:
    """A small model's "tool name" can hold a whole reply with a code fence: the evidence quotes its
    start on one line without backticks, so the PRD that quotes the evidence stays Markdown."""
    from agentomnia.trajectories.messages import shown_name

    garbled = "set_requountaken care of.\nFinal answer:\n```json\n{"
    run = _listed().call(garbled, {"claim_id": "CLA-001"}, ok=False, valid=False,
                         error=("unknown_tool", "no such tool"))  # fmt: skip
    said = _tags(run, diff=(UNMET,))["wrong_tool"]
    assert "step 1 called `set_requountaken care of. Final answe...`," in said, said
    assert "\n" not in said and "```" not in said
    assert shown_name("approve_claim") == "approve_claim" and shown_name("getVendor") == "getVendor"


def test_wrong_tool_instead_of_the_needed_one() -> None:
    run = _listed().call("delete_claim", {"claim_id": "CLA-002"}, writes=True)
    tags = _tags(run, diff=(UNMET,))
    assert "`delete_claim`" in tags["wrong_tool"] and "`set_claim_status`" in tags["wrong_tool"]


def test_on_a_question_any_unneeded_tool_is_a_wrong_tool() -> None:
    question = Task.model_validate({
        **TASK.model_dump(exclude={"id"}), "query": "How many claims does shipment SHP-001 have?",
        "reference_calls": [{"tool": "list_claims", "args": {"shipment_id": "SHP-001"}}],
        "expected_diff": [], "expected_answer": {"claim_count": 2},
    })  # fmt: skip
    run = Run(question.query).call(
        "get_claim", {"claim_id": "CLA-001"}, ok=False, error=("not_found", "no such claim")
    )
    failure = tag_failure(result_of(question, run, answer={"claim_count": 1}), question, tools=TOOLS)
    assert failure.tags[0] == "wrong_tool" and "`get_claim`" in failure.evidence[0]
    assert "wrong_answer" in failure.tags


def test_extra_lookups_are_not_a_wrong_tool() -> None:
    run = _listed().call("get_claim", {"claim_id": "CLA-001"}, data=S0["claims"]["CLA-001"])
    tags = _tags(run, diff=(UNMET,))
    assert "wrong_tool" not in tags and "`set_claim_status`" not in tags.get("incomplete", "")
    assert "claims[CLA-001].status" in tags["incomplete"]


def test_misunderstood_tool() -> None:
    run = _listed().call("set_claim_status", {"claim_id": "CLA-001", "status": "approved"}, ok=False,
                         error=("invalid_state", "claim CLA-001 must be reviewed before approval"))  # fmt: skip
    tags = _tags(run, diff=(UNMET,))
    assert "step 1" in tags["misunderstood_tool"] and "must be reviewed" in tags["misunderstood_tool"]
    assert "invalid_arguments" not in tags


def test_invalid_arguments() -> None:
    run = _listed().call("set_claim_status", {"claim_id": "CLA-001", "status": "approve"}, ok=False,
                         error=("invalid_arguments", "status must be one of approved, rejected"))  # fmt: skip
    tags = _tags(run, diff=(UNMET,))
    assert (
        '"status": "approve"' in tags["invalid_arguments"] and "must be one of" in tags["invalid_arguments"]
    )
    assert "misunderstood_tool" not in tags


def test_wrong_order() -> None:
    run = (
        Run(TASK.query)
        .call("set_claim_status", {"claim_id": "CLA-001", "status": "approved"}, writes=True)
        .call("list_claims", {"shipment_id": "SHP-001"}, data=LISTING)
    )
    tags = _tags(run, answer={"amount": 120.0})
    assert "step 0 called `set_claim_status` before step 1 called `list_claims`" in tags["wrong_order"]
    # the id was used before anything showed it: invented, even though it happened to be right
    assert 'claim_id="CLA-001"' in tags["hallucinated_value"]


def test_hallucinated_value() -> None:
    run = _listed().call("set_claim_status", {"claim_id": "CLA-007", "status": "approved"}, ok=False,
                         error=("not_found", "no claim CLA-007"))  # fmt: skip
    tags = _tags(run, diff=(UNMET,))
    assert "step 1" in tags["hallucinated_value"] and "CLA-007" in tags["hallucinated_value"]


def test_values_from_results_and_schemas_are_not_hallucinated() -> None:
    run = _listed().call("set_claim_status", {"claim_id": "CLA-001", "status": "approved"}, writes=True)
    tags = _tags(run, answer={"amount": 75.5}, components={"T1": True, "T2": False, "G1": True},
                 details={"T2": "answer.amount is 75.5, expected 120.0"})  # fmt: skip
    assert "hallucinated_value" not in tags  # 75.5 was in the listing, just the wrong claim's
    assert (
        tags["wrong_answer"]
        == "rubric T2 (Reports the claim amount.) failed: answer.amount is 75.5, expected 120.0"
    )


def test_hallucinated_answer_value() -> None:
    run = _listed().call("set_claim_status", {"claim_id": "CLA-001", "status": "approved"}, writes=True)
    tags = _tags(run, answer={"amount": 999.25})
    assert "answer.amount=999.25" in tags["hallucinated_value"]
    assert "answer.amount is 999.25; expected 120.0" in tags["wrong_answer"]


def test_missed_constraint_and_collateral_change() -> None:
    run = (
        _listed()
        .call("set_claim_status", {"claim_id": "CLA-001", "status": "approved"}, writes=True)
        .call("delete_claim", {"claim_id": "CLA-002"}, writes=True)
    )
    gone = FieldDiff(table="claims", key="CLA-002", field="*", initial=S0["claims"]["CLA-002"], expected=S0["claims"]["CLA-002"])  # fmt: skip
    tags = _tags(run, answer={"amount": 120.0}, diff=(gone,), components={"T1": True, "T2": True, "G1": False},
                 details={"G1": "delete_claim called"})  # fmt: skip
    assert tags["missed_constraint"] == "rubric G1 (Deletes no claim.) failed: delete_claim called"
    assert tags["collateral_change"].startswith("claims[CLA-002] changed from")
    assert "incomplete" not in tags and "wrong_tool" not in tags


def test_collateral_field_change() -> None:
    run = _listed().call("set_claim_status", {"claim_id": "CLA-002", "status": "rejected"}, writes=True)
    tags = _tags(run, diff=(UNMET, STRAY))
    assert 'claims[CLA-002].status changed from "open" to "rejected"' in tags["collateral_change"]
    assert 'claims[CLA-001].status is "open"; the task needs "approved"' in tags["incomplete"]


def test_budget_exhausted() -> None:
    run = _listed().call("list_claims", {"shipment_id": "SHP-001"}, data=LISTING)
    tags = _tags(run, stop="budget", diff=(UNMET,))
    assert "whole turn budget (2 tool calls)" in tags["budget_exhausted"]
    invalid = _listed().call("set_claim_status", {"claim_id": "CLA-001"}, ok=False,
                             error=("invalid_arguments", "status is required"))  # fmt: skip
    assert "repeated invalid calls" in _tags(invalid, stop="invalid_calls", diff=(UNMET,))["budget_exhausted"]


def test_every_failure_gets_a_tag() -> None:
    # nothing in the process or the diff explains it: the failing rubric item is named
    run = _listed().call("set_claim_status", {"claim_id": "CLA-001", "status": "approved"}, writes=True)
    tags = _tags(run, answer={"amount": 120.0}, components={"T1": False}, details={"T1": "claims[CLA-001].status is 'open'"})  # fmt: skip
    assert tags == {
        "incomplete": "rubric T1 (Claim CLA-001 ends approved.) failed: claims[CLA-001].status is 'open'"
    }


def test_failures_of_skips_passes_and_infrastructure_errors() -> None:
    results = [
        result_of(TASK, _listed(), trial=0, diff=(UNMET,)),
        result_of(TASK, _listed(), trial=1, passed=True, score=1.0),
        result_of(TASK, _listed(), trial=2, infra="worker died"),
    ]
    (failure,) = failures_of(results, {TASK.id: TASK})
    assert failure.trial == 0 and failure.result_id == results[0].id and failure.coordinate == TASK.coordinate
    assert failure.round == results[0].round and "incomplete" in failure.tags


def test_program_calls_are_read_from_the_source() -> None:
    code = (
        "def solve(call):\n"
        "    found = call('list_claims', shipment_id='SHP-001')\n"
        "    for item in found['data']['items']:\n"
        "        call('set_claim_status', claim_id=item['claim_id'], status='approved')\n"
        "    return {}\n"
    )
    calls = program_calls(code)
    assert [c.tool for c in calls] == ["list_claims", "set_claim_status"]
    assert calls[0].args == {"shipment_id": "SHP-001"} and calls[1].args == {"status": "approved"}
    assert program_calls("def solve(:\n") == []
