"""Launch one round on the Kubernetes deployment through the Dagster webserver's GraphQL API.

    kubectl -n agentomnia port-forward svc/agentomnia-dagster-webserver 8080:80 &
    python -m deploy.k8s.round --url http://127.0.0.1:8080 --round r0 --wait

Adds the round to the `rounds` partitions (a no-op when it exists), launches `k8s_synthesis_job`
(or `--job`) for it, prints the run id and, with `--wait`, polls until the run ends and exits
non-zero unless it succeeded. Only the standard library: it runs from any machine that reaches
the webserver, with or without the project installed.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from typing import Any

LOCATION = "agentomnia"  # the user deployment's name in values.yaml
REPOSITORY = "__repository__"  # what Dagster calls the repository of a Definitions object
PARTITIONS = "rounds"
DEFAULT_JOB = "k8s_synthesis_job"
FINISHED = {"SUCCESS", "FAILURE", "CANCELED"}

ADD_PARTITION = """
mutation AddRound($repository: RepositorySelector!, $partitions: String!, $key: String!) {
  addDynamicPartition(repositorySelector: $repository, partitionsDefName: $partitions, partitionKey: $key) {
    __typename
    ... on AddDynamicPartitionSuccess { partitionKey }
    ... on DuplicateDynamicPartitionError { partitionName }
    ... on PythonError { message }
    ... on UnauthorizedError { message }
  }
}
"""

LAUNCH_RUN = """
mutation LaunchRound($params: ExecutionParams!) {
  launchRun(executionParams: $params) {
    __typename
    ... on LaunchRunSuccess { run { runId } }
    ... on PythonError { message }
    ... on RunConfigValidationInvalid { errors { message } }
    ... on InvalidSubsetError { message }
    ... on UnauthorizedError { message }
  }
}
"""

RUN_STATUS = """
query RunStatus($runId: ID!) {
  runOrError(runId: $runId) {
    __typename
    ... on Run { status }
    ... on RunNotFoundError { message }
    ... on PythonError { message }
  }
}
"""


class RoundError(RuntimeError):
    """The webserver refused or failed a request; the message says which and why."""


def graphql(url: str, query: str, variables: dict[str, Any], timeout_s: float = 60.0) -> dict[str, Any]:
    """The `data` of one GraphQL request; errors become RoundError."""
    request = urllib.request.Request(
        url.rstrip("/") + "/graphql",
        data=json.dumps({"query": query, "variables": variables}).encode(),
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            body = json.load(response)
    except (urllib.error.URLError, TimeoutError) as exc:
        raise RoundError(
            f"cannot reach the Dagster webserver at {url}: {exc}; is the port-forward running?"
        ) from exc
    if body.get("errors"):
        raise RoundError(f"GraphQL errors: {[e.get('message') for e in body['errors']]}")
    data: dict[str, Any] = body["data"]
    return data


def _repository(location: str) -> dict[str, str]:
    return {"repositoryLocationName": location, "repositoryName": REPOSITORY}


def add_round(url: str, round_key: str, location: str = LOCATION) -> bool:
    """Add `round_key` to the rounds partitions; False when it was already there."""
    variables = {"repository": _repository(location), "partitions": PARTITIONS, "key": round_key}
    result = graphql(url, ADD_PARTITION, variables)["addDynamicPartition"]
    kind = result["__typename"]
    if kind == "AddDynamicPartitionSuccess":
        return True
    if kind == "DuplicateDynamicPartitionError":
        return False
    raise RoundError(f"adding round {round_key}: {kind}: {result.get('message', '')}")


def launch(
    url: str,
    round_key: str,
    job: str = DEFAULT_JOB,
    run_config: dict[str, Any] | None = None,
    location: str = LOCATION,
) -> str:
    """Launch `job` for `round_key`; the run id."""
    params = {
        "selector": {**_repository(location), "jobName": job},
        "runConfigData": run_config or {},
        "executionMetadata": {"tags": [{"key": "dagster/partition", "value": round_key}]},
    }
    result = graphql(url, LAUNCH_RUN, {"params": params})["launchRun"]
    if result["__typename"] != "LaunchRunSuccess":
        details = result.get("message") or [e["message"] for e in result.get("errors", [])]
        raise RoundError(f"launching {job} for round {round_key}: {result['__typename']}: {details}")
    run_id: str = result["run"]["runId"]
    return run_id


def wait(url: str, run_id: str, timeout_s: float, poll_s: float = 10.0) -> str:
    """Poll the run until it finishes (its final status) or `timeout_s` passes (RoundError)."""
    deadline = time.monotonic() + timeout_s
    while True:
        result = graphql(url, RUN_STATUS, {"runId": run_id})["runOrError"]
        if result["__typename"] != "Run":
            raise RoundError(f"run {run_id}: {result['__typename']}: {result.get('message', '')}")
        status: str = result["status"]
        if status in FINISHED:
            return status
        if time.monotonic() > deadline:
            raise RoundError(f"run {run_id} is still {status} after {timeout_s:.0f} s")
        time.sleep(poll_s)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m deploy.k8s.round", description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True, help="the webserver, e.g. http://127.0.0.1:8080")
    parser.add_argument("--round", required=True, help="round partition key, e.g. r0")
    parser.add_argument("--job", default=DEFAULT_JOB, help=f"job to launch (default {DEFAULT_JOB})")
    parser.add_argument("--location", default=LOCATION, help=f"code location name (default {LOCATION})")
    parser.add_argument("--config", help="run config as a JSON object (e.g. ops.<asset>.config overrides)")
    parser.add_argument(
        "--wait", action="store_true", help="poll until the run ends; exit 1 unless it succeeded"
    )
    parser.add_argument("--timeout", type=float, default=6 * 3600, help="seconds --wait waits (default 6 h)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    run_config = json.loads(args.config) if args.config else None
    if run_config is not None and not isinstance(run_config, dict):
        parser.error("argument --config: must be a JSON object")
    try:
        added = add_round(args.url, args.round, args.location)
        print(f"round {args.round}: {'added' if added else 'already present'}")
        run_id = launch(args.url, args.round, args.job, run_config, args.location)
        print(f"launched {args.job} for {args.round}: run {run_id}")
        if not args.wait:
            return 0
        status = wait(args.url, run_id, args.timeout)
    except RoundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"run {run_id}: {status}")
    return 0 if status == "SUCCESS" else 1


if __name__ == "__main__":
    raise SystemExit(main())
