"""A local many-machines deployment on one machine: PostgreSQL, Redis, Celery workers, daemon, UI.

`python -m deploy.cluster up` starts a private PostgreSQL cluster and a Redis server on 127.0.0.1
(free ports, Debian packages, installed with apt-get when missing and running as root), two Celery
workers, the Dagster daemon and, unless `--no-ui`, the webserver, all against the instance in
deploy/dagster.yaml. `round` launches one round of `distributed_round_job` through the daemon's
queue, waits for it and prints which worker ran each step. `status` and `down` do what they say.
Everything lives in a state folder (default `$AGENTOMNIA_HOME/cluster`); `cluster.json` there
records ports and processes, and `cluster.env` can be sourced to use `dagster` CLI commands on it.
The Makefile fragment deploy/celery.mk and tests/distributed use this module.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psutil
from pydantic import BaseModel, Field

if TYPE_CHECKING:
    from dagster import DagsterInstance

REPO = Path(__file__).resolve().parent.parent
DEPLOY = REPO / "deploy"
WORKSPACE = DEPLOY / "workspace.yaml"
ROUND_JOB = "distributed_round_job"
PG_USER = "agentomnia"
PG_DB = "dagster"
DB_SYSTEM_USER = "postgres"  # initdb refuses root; the Debian package creates this user
QUEUE = "dagster"


class ClusterError(RuntimeError):
    """The cluster could not be started, reached or stopped; the message says what to do."""


class Service(BaseModel):
    """A process this module started: its session leader's pid and start time (never reuse a pid)."""

    name: str
    pid: int
    started: float
    log: str
    command: list[str]

    def alive(self) -> bool:
        try:
            proc = psutil.Process(self.pid)
            return abs(proc.create_time() - self.started) < 1.0 and proc.status() != psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return False


class Cluster(BaseModel):
    """Everything `up` decided, as written to `cluster.json`."""

    state_dir: str
    home: str
    pg_data: str
    pg_bin: str
    pg_port: int
    pg_password: str
    redis_port: int
    web_port: int | None = None
    workers: list[str] = Field(default_factory=list)
    services: dict[str, Service] = Field(default_factory=dict)

    @property
    def dagster_home(self) -> Path:
        return Path(self.state_dir) / "dagster"

    @property
    def logs(self) -> Path:
        return Path(self.state_dir) / "logs"

    @property
    def broker(self) -> str:
        return f"redis://127.0.0.1:{self.redis_port}/0"

    @property
    def web_url(self) -> str | None:
        return f"http://127.0.0.1:{self.web_port}" if self.web_port else None

    def env(self) -> dict[str, str]:
        """The variables every process of the deployment runs with."""
        python_path = [str(REPO), str(DEPLOY / "celery_config")]
        if os.environ.get("PYTHONPATH"):
            python_path.append(os.environ["PYTHONPATH"])
        return {
            "DAGSTER_HOME": str(self.dagster_home),
            "AGENTOMNIA_HOME": self.home,
            "AGENTOMNIA_PG_HOST": "127.0.0.1",
            "AGENTOMNIA_PG_PORT": str(self.pg_port),
            "AGENTOMNIA_PG_USER": PG_USER,
            "AGENTOMNIA_PG_PASSWORD": self.pg_password,
            "AGENTOMNIA_PG_DB": PG_DB,
            "AGENTOMNIA_CELERY_BROKER": self.broker,
            "AGENTOMNIA_CELERY_BACKEND": f"redis://127.0.0.1:{self.redis_port}/1",
            "PYTHONPATH": os.pathsep.join(python_path),
            # nothing is downloaded at run time, and no process phones home
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "HF_DATASETS_OFFLINE": "1",
            "TOKENIZERS_PARALLELISM": "false",
            "DO_NOT_TRACK": "1",
        }

    def save(self) -> None:
        state = Path(self.state_dir)
        state.mkdir(parents=True, exist_ok=True)
        _write_private(state / "cluster.json", self.model_dump_json(indent=2))
        exports = "".join(f"export {k}={_shell_quote(v)}\n" for k, v in sorted(self.env().items()))
        _write_private(state / "cluster.env", exports)


def _write_private(path: Path, text: str) -> None:
    """The files hold the database password: readable by their owner only."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)


def _shell_quote(value: str) -> str:
    return "'" + value.replace("'", "'\"'\"'") + "'"


def load(state_dir: Path) -> Cluster | None:
    path = state_dir / "cluster.json"
    return Cluster.model_validate_json(path.read_text(encoding="utf-8")) if path.exists() else None


def default_state_dir() -> Path:
    home = Path(os.environ.get("AGENTOMNIA_HOME", REPO / ".agentomnia")).expanduser().resolve()
    return home / "cluster"


# -- packages and binaries -------------------------------------------------------------------


def _pg_bin() -> Path | None:
    """The newest PostgreSQL server binaries; Debian keeps them off PATH, per major version."""
    found = sorted(
        (p for p in Path("/usr/lib/postgresql").glob("*/bin") if (p / "initdb").exists()),
        key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0,
    )
    if found:
        return found[-1]
    initdb = shutil.which("initdb")
    return Path(initdb).resolve().parent if initdb else None


def ensure_packages(install: bool = True) -> Path:
    """PostgreSQL and Redis from Debian packages; apt-get installs whichever is missing."""
    missing = [
        pkg
        for pkg, present in (("postgresql", _pg_bin()), ("redis-server", shutil.which("redis-server")))
        if not present
    ]
    if missing:
        if not install or os.geteuid() != 0 or not shutil.which("apt-get"):
            raise ClusterError(
                f"{' and '.join(missing)} not installed; run `sudo apt-get install -y {' '.join(missing)}` "
                "(Debian/Ubuntu) and try again"
            )
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "update", "-q"], check=True, env=env, stdout=subprocess.DEVNULL)
        subprocess.run(
            ["apt-get", "install", "-y", "-q", "--no-install-recommends", *missing],
            check=True,
            env=env,
            stdout=subprocess.DEVNULL,
        )
    pg_bin = _pg_bin()
    if pg_bin is None or not shutil.which("redis-server"):
        raise ClusterError("apt-get finished but initdb or redis-server is still missing; check its output")
    return pg_bin


def _tool(name: str) -> str:
    """A console script of this virtual environment (dagster-webserver, celery, ...)."""
    sibling = Path(sys.executable).parent / name
    if sibling.exists():
        return str(sibling)
    found = shutil.which(name)
    if found is None:
        raise ClusterError(f"`{name}` is not installed in this environment; run `make install`")
    return found


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# -- PostgreSQL ------------------------------------------------------------------------------


def _as_db_user(cmd: Sequence[str]) -> list[str]:
    """PostgreSQL refuses to run as root; as root, run it as the packaged `postgres` user."""
    return ["runuser", "-u", DB_SYSTEM_USER, "--", *cmd] if os.geteuid() == 0 else list(cmd)


def _db_owned(path: Path) -> None:
    if os.geteuid() == 0:
        shutil.chown(path, user=DB_SYSTEM_USER, group=DB_SYSTEM_USER)


def _start_postgres(cluster: Cluster) -> None:
    data = Path(cluster.pg_data)
    pg_bin = Path(cluster.pg_bin)
    # next to the data folder, which the database user owns (as root, the state folder may be private)
    log = data.parent / "postgres.log"
    if not (data / "PG_VERSION").exists():
        data.mkdir(parents=True, exist_ok=True)
        _db_owned(data)
        data.chmod(0o700)
        pwfile = data.parent / f".pw-{uuid.uuid4().hex}"
        _write_private(pwfile, cluster.pg_password + "\n")
        _db_owned(pwfile)
        try:
            subprocess.run(
                _as_db_user([str(pg_bin / "initdb"), "-D", str(data), "-U", PG_USER, "-E", "UTF8",
                             "--auth-host=scram-sha-256", "--auth-local=peer", f"--pwfile={pwfile}"]),
                check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            )  # fmt: skip
        except subprocess.CalledProcessError as exc:
            raise ClusterError(
                f"initdb failed in {data}: {exc.stderr.decode(errors='replace')[-800:]}"
            ) from exc
        finally:
            pwfile.unlink(missing_ok=True)
    log.touch()
    _db_owned(log)
    options = f"-c listen_addresses=127.0.0.1 -p {cluster.pg_port} -k {data}"
    start = subprocess.run(
        _as_db_user([str(pg_bin / "pg_ctl"), "-D", str(data), "-l", str(log), "-o", options, "-w", "-t", "60", "start"]),
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    if start.returncode != 0:
        tail = log.read_text(errors="replace")[-800:] if log.exists() else ""
        raise ClusterError(
            f"PostgreSQL did not start on port {cluster.pg_port}: {start.stderr.decode(errors='replace')[-400:]}"
            f"\nits log ({log}) ends:\n{tail}"
        )
    import psycopg2

    con = psycopg2.connect(
        host="127.0.0.1", port=cluster.pg_port, user=PG_USER, password=cluster.pg_password, dbname="postgres"
    )
    try:
        con.autocommit = True
        with con.cursor() as cur:
            cur.execute("SELECT 1 FROM pg_database WHERE datname = %s", (PG_DB,))
            if cur.fetchone() is None:
                cur.execute(f'CREATE DATABASE "{PG_DB}"')
    finally:
        con.close()


def _postgres_running(cluster: Cluster) -> bool:
    status = subprocess.run(
        _as_db_user([str(Path(cluster.pg_bin) / "pg_ctl"), "-D", cluster.pg_data, "status"]),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return status.returncode == 0


def _stop_postgres(cluster: Cluster) -> None:
    if Path(cluster.pg_data, "PG_VERSION").exists() and _postgres_running(cluster):
        subprocess.run(
            _as_db_user([str(Path(cluster.pg_bin) / "pg_ctl"), "-D", cluster.pg_data, "-m", "fast", "-w", "stop"]),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip


# -- processes -------------------------------------------------------------------------------


def _spawn(cluster: Cluster, name: str, command: list[str]) -> Service:
    cluster.logs.mkdir(parents=True, exist_ok=True)
    log = cluster.logs / f"{name}.log"
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            command,
            cwd=REPO,
            env={**os.environ, **cluster.env()},
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: `down` stops it and its children together
        )
    service = Service(
        name=name, pid=proc.pid, started=psutil.Process(proc.pid).create_time(), log=str(log), command=command
    )
    cluster.services[name] = service
    cluster.save()
    return service


def _stop(services: Sequence[Service], grace_s: float = 20.0) -> None:
    """SIGTERM to each group at once, SIGKILL to whatever is still alive after `grace_s`."""
    running = [s for s in services if s.alive()]
    for s in running:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(s.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while any(s.alive() for s in running) and time.monotonic() < deadline:
        time.sleep(0.2)
    for s in running:
        if s.alive():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(s.pid, signal.SIGKILL)
        with contextlib.suppress(psutil.NoSuchProcess, psutil.TimeoutExpired):
            psutil.Process(s.pid).wait(timeout=5)


def _log_tail(service: Service, chars: int = 1500) -> str:
    path = Path(service.log)
    return path.read_text(errors="replace")[-chars:] if path.exists() else "(no log)"


def _wait(what: str, ready: Any, timeout_s: float, watch: Sequence[Service] = ()) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        for s in watch:
            if not s.alive():
                raise ClusterError(f"{s.name} exited while starting; its log ({s.log}) ends:\n{_log_tail(s)}")
        with contextlib.suppress(Exception):
            if ready():
                return
        if time.monotonic() >= deadline:
            tails = "\n".join(f"--- {s.name} ({s.log}):\n{_log_tail(s)}" for s in watch)
            raise ClusterError(f"{what} not ready after {timeout_s:.0f}s\n{tails}")
        time.sleep(0.5)


def _redis_ready(cluster: Cluster) -> bool:
    import redis

    return bool(redis.Redis(host="127.0.0.1", port=cluster.redis_port, socket_timeout=1).ping())


def _workers_ready(cluster: Cluster) -> bool:
    from celery import Celery

    app = Celery("agentomnia-probe", broker=cluster.broker)
    try:
        replies = app.control.ping(timeout=1.0)
    finally:
        app.close()
    answered = {name for reply in replies for name in reply}
    return all(any(a.startswith(f"{w}@") for a in answered) for w in cluster.workers)


def _web_ready(cluster: Cluster) -> bool:
    assert cluster.web_url is not None
    with urllib.request.urlopen(f"{cluster.web_url}/server_info", timeout=2) as resp:
        return bool(resp.status == 200)


@contextlib.contextmanager
def instance(cluster: Cluster) -> Iterator[DagsterInstance]:
    """The deployment's Dagster instance, opened in this process with the deployment's variables."""
    from dagster import DagsterInstance

    saved = {k: os.environ.get(k) for k in cluster.env()}
    os.environ.update(cluster.env())
    try:
        with DagsterInstance.from_config(str(cluster.dagster_home)) as inst:
            yield inst
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _daemon_ready(cluster: Cluster) -> bool:
    with instance(cluster) as inst:
        beats = inst.get_daemon_heartbeats()
    return "QUEUED_RUN_COORDINATOR" in beats and "SCHEDULER" in beats


# -- the commands ----------------------------------------------------------------------------


def up(
    state_dir: Path | None = None,
    *,
    home: Path | None = None,
    workers: int = 2,
    ui: bool = True,
    web_port: int | None = None,
    install: bool = True,
    timeout_s: float = 240.0,
) -> Cluster:
    """Start whatever of the deployment is not running yet and wait until every part answers."""
    state = (state_dir or default_state_dir()).resolve()
    existing = load(state)
    wanted = {"redis", "daemon", *(f"worker{i + 1}" for i in range(workers)), *(["webserver"] if ui else [])}
    if (
        existing is not None
        and wanted <= set(existing.services)
        and all(s.alive() for s in existing.services.values())
        and _postgres_running(existing)
    ):
        return existing
    if existing is not None:
        down(state)  # a half-running deployment: stop what is left, keep the data, start again
    pg_bin = ensure_packages(install)
    state.mkdir(parents=True, exist_ok=True)
    if existing is not None and Path(existing.pg_data, "PG_VERSION").exists():
        pg_data, password = Path(existing.pg_data), existing.pg_password
    else:
        # as root the data folder must belong to `postgres`, and every folder above it must let that
        # user through: a fresh folder under the (world-traversable) system temp dir always does
        pg_data = (
            Path(tempfile.mkdtemp(prefix="agentomnia-pg-")) / "data"
            if os.geteuid() == 0
            else state / "postgres"
        )
        if os.geteuid() == 0:
            _db_owned(pg_data.parent)
        password = secrets.token_urlsafe(18)
    cluster = Cluster(
        state_dir=str(state),
        home=str(
            (home or Path(os.environ.get("AGENTOMNIA_HOME", REPO / ".agentomnia"))).expanduser().resolve()
        ),
        pg_data=str(pg_data),
        pg_bin=str(pg_bin),
        pg_port=free_port(),
        pg_password=password,
        redis_port=free_port(),
        web_port=(web_port or free_port()) if ui else None,
        workers=[f"worker{i + 1}" for i in range(workers)],
    )
    Path(cluster.home).mkdir(parents=True, exist_ok=True)
    cluster.dagster_home.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(DEPLOY / "dagster.yaml", cluster.dagster_home / "dagster.yaml")
    cluster.logs.mkdir(parents=True, exist_ok=True)
    cluster.save()

    try:
        _start_services(cluster, ui, timeout_s)
    except BaseException:
        down(state)  # leave nothing half-started behind; the data stays for the next `up`
        raise
    return cluster


def _start_services(cluster: Cluster, ui: bool, timeout_s: float) -> None:
    _start_postgres(cluster)
    redis_dir = Path(cluster.state_dir) / "redis"
    redis_dir.mkdir(exist_ok=True)
    redis = _spawn(cluster, "redis", [shutil.which("redis-server") or "redis-server", "--port", str(cluster.redis_port),
                                      "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", str(redis_dir)])  # fmt: skip
    _wait("Redis", lambda: _redis_ready(cluster), 30, [redis])
    started = [
        _spawn(cluster, name, [_tool("celery"), "-A", "dagster_celery.app", "worker", "-n", f"{name}@%h", "-Q", QUEUE,
                               "--concurrency", "1", "--loglevel", "INFO", "--without-gossip", "--without-mingle"])
        for name in cluster.workers
    ]  # fmt: skip
    started.append(_spawn(cluster, "daemon", [_tool("dagster-daemon"), "run", "-w", str(WORKSPACE)]))
    if ui:
        started.append(
            _spawn(cluster, "webserver", [_tool("dagster-webserver"), "-w", str(WORKSPACE), "-h", "127.0.0.1",
                                          "-p", str(cluster.web_port)])
        )  # fmt: skip
    _wait("Celery workers", lambda: _workers_ready(cluster), timeout_s, started)
    _wait("Dagster daemon", lambda: _daemon_ready(cluster), timeout_s, started)
    if ui:
        _wait("Dagster webserver", lambda: _web_ready(cluster), timeout_s, started)


def down(state_dir: Path | None = None, *, purge: bool = False) -> None:
    """Stop every process `up` started; `purge` also deletes the database and all cluster state."""
    state = (state_dir or default_state_dir()).resolve()
    cluster = load(state)
    if cluster is None:
        return
    # everything that talks to the broker and the database first, then the broker, then the database
    _stop([s for name, s in cluster.services.items() if name != "redis"])
    _stop([s for name, s in cluster.services.items() if name == "redis"])
    _stop_postgres(cluster)
    if purge:
        pg_root = Path(cluster.pg_data).parent
        shutil.rmtree(cluster.pg_data, ignore_errors=True)
        if pg_root.name.startswith("agentomnia-pg-"):
            shutil.rmtree(pg_root, ignore_errors=True)
        shutil.rmtree(state, ignore_errors=True)


def status(state_dir: Path | None = None) -> dict[str, bool]:
    """Which parts of the deployment are running."""
    cluster = load((state_dir or default_state_dir()).resolve())
    if cluster is None:
        return {}
    out = {"postgres": _postgres_running(cluster)}
    out.update({name: s.alive() for name, s in cluster.services.items()})
    return out


def launch_round(
    cluster: Cluster, round_key: str = "r0", run_config: dict[str, Any] | None = None, job: str = ROUND_JOB
) -> str:
    """Queue one round of `job` through the daemon (as the UI would) and return its run id."""
    from deploy.celery_job import small_round_config

    with instance(cluster) as inst:
        if not inst.has_dynamic_partition("rounds", round_key):
            inst.add_dynamic_partitions("rounds", [round_key])
    run_id = str(uuid.uuid4())
    launched = subprocess.run(
        [_tool("dagster"), "job", "launch", "-w", str(WORKSPACE), "-j", job, "--run-id", run_id,
         "--config-json", json.dumps(run_config if run_config is not None else small_round_config()),
         "--tags", json.dumps({"dagster/partition": round_key, "agentomnia/deployment": "celery"})],
        cwd=REPO, env={**os.environ, **cluster.env()}, capture_output=True, text=True,
    )  # fmt: skip
    if launched.returncode != 0:
        raise ClusterError(f"`dagster job launch` failed:\n{(launched.stdout + launched.stderr)[-2000:]}")
    return run_id


def wait_for_run(cluster: Cluster, run_id: str, timeout_s: float = 1800.0) -> str:
    """Block until the run finishes; returns its final status name (SUCCESS, FAILURE, CANCELED)."""
    from dagster import DagsterRunStatus

    finished = {DagsterRunStatus.SUCCESS, DagsterRunStatus.FAILURE, DagsterRunStatus.CANCELED}
    deadline = time.monotonic() + timeout_s
    with instance(cluster) as inst:
        while True:
            run = inst.get_run_by_id(run_id)
            if run is not None and run.status in finished:
                return run.status.value
            if time.monotonic() >= deadline:
                state = run.status.value if run else "unknown"
                raise ClusterError(
                    f"run {run_id} still {state} after {timeout_s:.0f}s; see the daemon and worker logs in "
                    f"{cluster.logs}"
                )
            time.sleep(1.0)


def step_workers(cluster: Cluster, run_id: str) -> dict[str, str]:
    """Step key -> the Celery worker (name@host) that executed it, from the run's event log."""
    from dagster import DagsterEventType

    out: dict[str, str] = {}
    with instance(cluster) as inst:
        for record in inst.all_logs(run_id, of_type=DagsterEventType.ENGINE_EVENT):
            event = record.dagster_event
            data = event.engine_event_data if event is not None else None
            worker = data.metadata.get("Celery worker") if data is not None else None
            if event is not None and event.step_key and worker is not None:
                out[event.step_key] = str(getattr(worker, "value", worker))
    return out


def step_failures(cluster: Cluster, run_id: str) -> list[str]:
    """The error messages of failed steps, to show why a run failed."""
    from dagster import DagsterEventType

    with instance(cluster) as inst:
        records = inst.all_logs(run_id, of_type=DagsterEventType.STEP_FAILURE)
    return [f"{r.dagster_event.step_key}: {r.message}" for r in records if r.dagster_event is not None]


def _print_status(parts: dict[str, bool], as_json: bool) -> int:
    if as_json:
        print(json.dumps(parts))
    elif not parts:
        print("no deployment here; start one with `python -m deploy.cluster up`")
    else:
        for name, alive in parts.items():
            print(f"  {name:<10} {'running' if alive else 'stopped'}")
    return 0 if parts and all(parts.values()) else 1


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deploy.cluster", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--state", type=Path, default=None, help="state folder (default $AGENTOMNIA_HOME/cluster)"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p_up = sub.add_parser("up", help="start PostgreSQL, Redis, Celery workers, the daemon and the webserver")
    p_up.add_argument("--workers", type=int, default=2)
    p_up.add_argument("--no-ui", action="store_true", help="no webserver")
    p_up.add_argument("--web-port", type=int, default=3001)
    p_up.add_argument("--no-install", action="store_true", help="never run apt-get")
    p_round = sub.add_parser(
        "round", help="run one round of seeds -> environments -> DAG tasks on the workers"
    )
    p_round.add_argument("--round", default="r0")
    p_round.add_argument("--max-environments", type=int, default=3)
    p_round.add_argument("--timeout", type=float, default=1800.0)
    p_status = sub.add_parser("status", help="which parts are running (exit 1 unless all are)")
    p_status.add_argument("--json", action="store_true")
    p_down = sub.add_parser("down", help="stop everything")
    p_down.add_argument("--purge", action="store_true", help="also delete the database and all cluster state")
    args = parser.parse_args(argv)

    try:
        if args.command == "up":
            cluster = up(args.state, workers=args.workers, ui=not args.no_ui, web_port=args.web_port,
                         install=not args.no_install)  # fmt: skip
            print(f"deployment up: {len(cluster.workers)} Celery workers on redis 127.0.0.1:{cluster.redis_port}, "
                  f"PostgreSQL 127.0.0.1:{cluster.pg_port}")  # fmt: skip
            if cluster.web_url:
                print(f"  UI       {cluster.web_url}")
            print(f"  state    {cluster.state_dir}  (source cluster.env there to use the dagster CLI)")
            return 0
        if args.command == "round":
            cluster = load((args.state or default_state_dir()).resolve())  # type: ignore[assignment]
            if cluster is None:
                raise ClusterError("no deployment is up; run `python -m deploy.cluster up` first")
            from deploy.celery_job import small_round_config

            started = time.perf_counter()
            run_id = launch_round(cluster, args.round, small_round_config(args.max_environments))
            print(f"run {run_id} queued" + (f": {cluster.web_url}/runs/{run_id}" if cluster.web_url else ""))
            final = wait_for_run(cluster, run_id, args.timeout)
            print(f"run {run_id}: {final} in {time.perf_counter() - started:.0f}s")
            for step, worker in sorted(step_workers(cluster, run_id).items()):
                print(f"  {step:<60} {worker}")
            for failure in step_failures(cluster, run_id):
                print(f"  FAILED {failure}")
            return 0 if final == "SUCCESS" else 1
        if args.command == "status":
            return _print_status(status(args.state), args.json)
        down(args.state, purge=args.purge)
        return 0
    except ClusterError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
