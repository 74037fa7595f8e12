"""Several endpoints used as one: a request goes where its prefix is cached unless that endpoint is
busier than the least loaded by more than the slack; every endpoint shares one response cache."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from agentomnia.config import LLMSettings
from agentomnia.llm import OpenAICompatibleLLM, RoutedLLM, make_llm
from agentomnia.llm.protocol import LLMResponse, Usage
from agentomnia.llm.router import prefix_key


class Endpoint:
    """A model server stand-in that takes `delay` seconds per request and records what it served."""

    model = "judge"

    def __init__(self, name: str, delay: float = 0.0) -> None:
        self.name, self.delay = name, delay
        self.seen: list[str] = []
        self.lock = threading.Lock()
        self.gate: threading.Event | None = None

    def complete(self, messages: Sequence[Mapping[str, Any]], **kwargs: Any) -> LLMResponse:
        if self.gate is not None:
            self.gate.wait(5)
        time.sleep(self.delay)
        with self.lock:
            self.seen.append(prefix_key(messages))
        return LLMResponse(text="{}", data={}, usage=Usage(requests=1, prompt_tokens=10), request_hash="h")

    @property
    def usage(self) -> Usage:
        return Usage(requests=len(self.seen), prompt_tokens=10 * len(self.seen))


def _request(transcript: int, item: int) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": "Decide the rubric item from the transcript."},
        {"role": "user", "content": f"transcript {transcript}: " + "call get_order -> ok. " * 50},
        {"role": "user", "content": f"item {item}: the order is cancelled"},
    ]


def test_items_of_one_transcript_go_to_one_endpoint_when_load_allows() -> None:
    endpoints = [Endpoint(f"e{i}") for i in range(3)]
    router = RoutedLLM(endpoints)
    for transcript in range(12):
        for item in range(4):
            router.complete(_request(transcript, item))
    for transcript in range(12):
        key = prefix_key(_request(transcript, 0))
        holders = [e.name for e in endpoints if key in e.seen]
        assert len(holders) == 1, (transcript, holders)  # its prefix is read by one server only
    assert router.moved == 0 and sum(router.sent) == 48
    assert all(n > 0 for n in router.sent)  # twelve prefixes spread over all three
    assert router.usage.requests == 48


def test_a_busy_home_sends_requests_to_the_least_loaded_endpoint() -> None:
    endpoints = [Endpoint(f"e{i}") for i in range(3)]
    router = RoutedLLM(endpoints, slack=1)
    home = router.home(_request(7, 0))
    gate = threading.Event()  # every server stalls, so requests stay in flight while the rest arrive
    for e in endpoints:
        e.gate = gate
    with ThreadPoolExecutor(max_workers=8) as pool:
        futures = [pool.submit(router.complete, _request(7, item)) for item in range(8)]
        deadline = time.monotonic() + 5
        while sum(router.in_flight) < 8 and time.monotonic() < deadline:
            time.sleep(0.01)
        in_flight = list(router.in_flight)
        gate.set()
        for f in futures:
            f.result()
    # with slack 1 the home takes a request while it is at most one ahead of the least loaded
    assert sum(in_flight) == 8 and in_flight[home] == 4 and sorted(in_flight) == [2, 2, 4]
    assert router.moved == 4 and router.in_flight == [0, 0, 0]


def test_no_slack_is_pure_load_balancing_and_bad_arguments_are_refused() -> None:
    endpoints = [Endpoint("a", 0.02), Endpoint("b", 0.02)]
    router = RoutedLLM(endpoints, slack=0)
    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(lambda i: router.complete(_request(1, i)), range(8)))
    assert min(router.sent) >= 2  # one shared prefix, still split across both
    with pytest.raises(ValueError, match="at least one endpoint"):
        RoutedLLM([])
    with pytest.raises(ValueError, match="slack"):
        RoutedLLM(endpoints, slack=-1)


def test_make_llm_routes_over_the_configured_endpoints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTOMNIA_LLM_BASE_URLS", "http://127.0.0.1:9001/v1, http://127.0.0.1:9002/v1,")
    settings = LLMSettings.from_env()
    assert settings.base_urls == ("http://127.0.0.1:9001/v1", "http://127.0.0.1:9002/v1")
    routed = make_llm("llm", settings, tmp_path / "cache.duckdb")
    assert isinstance(routed, RoutedLLM)
    urls = [e.settings.base_url for e in routed.endpoints if isinstance(e, OpenAICompatibleLLM)]
    assert urls == list(settings.base_urls)
    caches = {id(e.cache) for e in routed.endpoints if isinstance(e, OpenAICompatibleLLM)}
    assert len(caches) == 1  # one cache: a hit does not depend on the route
    monkeypatch.setenv("AGENTOMNIA_LLM_BASE_URLS", "http://127.0.0.1:9001/v1")
    single = make_llm("llm", LLMSettings.from_env(), None)
    assert isinstance(single, OpenAICompatibleLLM) and single.settings.base_url == "http://127.0.0.1:9001/v1"
    assert make_llm("offline", settings, None) is None


def test_the_rubric_judge_sends_every_item_of_one_run_to_one_endpoint() -> None:
    """The judge puts the run before the item, so all items of a rollout share the routed prefix."""
    from agentomnia.tasks.grading import Outcome
    from agentomnia.tasks.models import RubricItem
    from agentomnia.trajectories.quality import rubric_judge
    from tests.rewards.conftest import make_task

    endpoints = [Endpoint(f"e{i}") for i in range(4)]
    judge = rubric_judge(RoutedLLM(endpoints))  # type: ignore[arg-type]
    items = [RubricItem(id=f"G{i}", text=f"the reply covers point {i}", scope="general") for i in range(6)]
    for run in range(8):
        outcome = Outcome(final_state={}, answer={"n": run}, calls=[("get_task", {"task_id": f"task_{run}"})])
        for item in items:
            judge(item, make_task(*items), outcome)
    served = [{key for key in e.seen} for e in endpoints]
    assert sum(len(s) for s in served) == 8  # eight runs, eight prefixes, each read on one endpoint
    assert sum(len(e.seen) for e in endpoints) == 48


def test_the_rubric_judge_is_told_which_calls_the_environment_refused() -> None:
    from agentomnia.rewards.judges import Transcript as CallRecord
    from agentomnia.tasks.models import RubricItem
    from agentomnia.trajectories.quality import rubric_judge
    from tests.rewards.conftest import make_task

    seen: list[str] = []

    class Model:
        model = "judge"

        def complete(self, messages: Sequence[Mapping[str, Any]], **kwargs: Any) -> LLMResponse:
            seen.append(str(messages[1]["content"]))
            return LLMResponse(text="{}", data={"passed": True}, request_hash="h")

    item = RubricItem(id="G1", text="the task is closed", scope="general")
    calls = [("update_task", {"task_id": "task_1", "status": "done"}), ("get_task", {"task_id": "task_1"})]
    judge = rubric_judge(Model())  # type: ignore[arg-type]
    assert judge(item, make_task(item), CallRecord(final_state={}, calls=calls, ok=[False, True])) is True
    assert '["update_task", {"task_id": "task_1", "status": "done"}, "refused"]' in seen[0]
    judge(item, make_task(item), CallRecord(final_state={}, calls=calls))  # no results kept: calls as made
    assert "refused" not in seen[1] and '["get_task", {"task_id": "task_1"}]' in seen[1]
