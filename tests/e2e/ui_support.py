"""What the browser end-to-end test needs that no other test does: live Dagster processes, GraphQL, Chromium.

The test checks the platform the way a user meets it: `dagster-webserver` and `dagster-daemon` as
separate processes on loopback, runs launched over `/graphql`, pages rendered by a real browser.
Keeping the process handling, the GraphQL client and the browser driver here lets the test read as
the scenario it checks, and gives every way this can break one clear message (which process died,
what its log said, which text never appeared, where the screenshot is).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

# Debian's packages (`make browser` installs them); override for another layout.
CHROMIUM = os.environ.get("AGENTOMNIA_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("AGENTOMNIA_CHROMEDRIVER", "/usr/bin/chromedriver")

SWEEP_MARK = "AGENTOMNIA_UI_TEST_MARK"

# The flags that keep Chromium headless, offline and unattended on a CI machine without a display.
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--no-proxy-server",
    "--hide-scrollbars",
    "--force-device-scale-factor=1",
)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def create_instance_storage(dagster_home: Path) -> None:
    """Create the instance's SQLite databases once, before any server starts.

    On a fresh DAGSTER_HOME the webserver's code server and the daemon would otherwise both create
    the schedule database at the same moment and trip over each other's schema migration
    ("Version table 'alembic_version' has more than one head present").
    """
    from dagster import DagsterInstance

    with DagsterInstance.from_config(str(dagster_home)) as instance:
        instance.get_runs(limit=1)
        instance.all_instigator_state()


def tail(path: Path, lines: int = 40) -> str:
    if not path.exists():
        return f"({path} was never written)"
    text = path.read_text(encoding="utf-8", errors="replace").splitlines()
    return "\n".join(text[-lines:])


@dataclass
class ServerProcess:
    """One long-running child in its own session, so it and every process it spawns stop together."""

    name: str
    argv: list[str]
    log: Path
    popen: subprocess.Popen[bytes] | None = None

    def start(self, cwd: Path, env: Mapping[str, str]) -> None:
        with self.log.open("wb") as out:
            # a new session makes the child a process-group leader: one killpg reaches the code
            # servers and run workers it starts as well
            self.popen = subprocess.Popen(
                self.argv,
                cwd=cwd,
                env=dict(env),
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def exited(self) -> int | None:
        return None if self.popen is None else self.popen.poll()

    def stop(self, grace_s: float = 20.0) -> None:
        """SIGTERM the group, wait, then SIGKILL the group and any descendant that left it."""
        if self.popen is None:
            return
        pid = self.popen.pid
        try:
            descendants = psutil.Process(pid).children(recursive=True)
        except psutil.NoSuchProcess:
            descendants = []
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(timeout=grace_s)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
        for proc in descendants:
            with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
                proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(timeout=grace_s)
        psutil.wait_procs(descendants, timeout=grace_s)


@dataclass
class DagsterServers:
    """`dagster-webserver` and `dagster-daemon run` for one workspace and one DAGSTER_HOME."""

    bin_dir: Path
    workspace: Path
    port: int
    log_dir: Path
    processes: list[ServerProcess] = field(default_factory=list)
    mark: str = field(default_factory=lambda: uuid.uuid4().hex)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, env: Mapping[str, str]) -> None:
        cwd = self.workspace.parent
        # every process started from here inherits this mark, so a final sweep finds stragglers
        # (a run worker or code server that left the process group) without touching anything else
        env = {**env, SWEEP_MARK: self.mark}
        self.processes = [
            ServerProcess(
                "dagster-webserver",
                [str(self.bin_dir / "dagster-webserver"), "-w", str(self.workspace),
                 "-h", "127.0.0.1", "-p", str(self.port)],
                self.log_dir / "webserver.log",
            ),
            ServerProcess(
                "dagster-daemon",
                [str(self.bin_dir / "dagster-daemon"), "run", "-w", str(self.workspace)],
                self.log_dir / "daemon.log",
            ),
        ]  # fmt: skip
        for proc in self.processes:
            proc.start(cwd, env)

    def stop(self) -> list[str]:
        """Stop both servers and everything they started; the command lines of any straggler killed."""
        for proc in self.processes:
            proc.stop()
        stragglers = []
        for candidate in psutil.process_iter():
            with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                if candidate.environ().get(SWEEP_MARK) == self.mark:
                    stragglers.append(" ".join(candidate.cmdline())[:200])
                    candidate.kill()
        return stragglers

    def check_alive(self) -> None:
        """Fail with the log of any server that has exited: nothing after this can work without it."""
        for proc in self.processes:
            code = proc.exited()
            if code is not None:
                raise AssertionError(
                    f"{proc.name} exited with code {code}; last lines of {proc.log}:\n{tail(proc.log)}"
                )

    def logs(self, lines: int = 30) -> str:
        return "\n".join(f"--- {p.name} ({p.log}):\n{tail(p.log, lines)}" for p in self.processes)


def wait_until(
    what: str,
    probe: Callable[[], Any],
    timeout_s: float,
    interval_s: float = 1.0,
    on_tick: Callable[[], None] = lambda: None,
) -> Any:
    """Call `probe` until it returns something truthy; fail after `timeout_s` naming what never happened."""
    deadline = time.monotonic() + timeout_s
    last_error = ""
    while time.monotonic() < deadline:
        on_tick()
        try:
            value = probe()
        except (OSError, urllib.error.URLError, GraphQLError) as exc:
            value, last_error = None, f"{type(exc).__name__}: {exc}"
        if value:
            return value
        time.sleep(interval_s)
    raise AssertionError(
        f"{what} did not happen within {timeout_s:.0f}s"
        + (f"; last error: {last_error}" if last_error else "")
    )


class GraphQLError(RuntimeError):
    """The server answered, but with GraphQL errors (a malformed query or a resolver that raised)."""


@dataclass
class GraphQL:
    """A minimal client for the webserver's `/graphql`, always direct (never through a proxy)."""

    url: str
    timeout_s: float = 60.0
    _opener: urllib.request.OpenerDirector = field(
        default_factory=lambda: urllib.request.build_opener(urllib.request.ProxyHandler({}))
    )

    def get(self, path: str) -> tuple[int, bytes]:
        with self._opener.open(self.url + path, timeout=self.timeout_s) as resp:
            return int(resp.status), resp.read()

    def __call__(self, query: str, variables: Mapping[str, Any] | None = None) -> dict[str, Any]:
        body = json.dumps({"query": query, "variables": dict(variables or {})}).encode("utf-8")
        request = urllib.request.Request(
            self.url + "/graphql", data=body, headers={"Content-Type": "application/json"}, method="POST"
        )
        try:
            with self._opener.open(request, timeout=self.timeout_s) as resp:
                payload = json.loads(resp.read())
        except urllib.error.HTTPError as exc:
            raise GraphQLError(f"HTTP {exc.code} from /graphql: {exc.read()[:2000]!r}") from exc
        if payload.get("errors"):
            raise GraphQLError(json.dumps(payload["errors"], indent=1)[:4000])
        data: dict[str, Any] = payload["data"]
        return data


def describe_error(result: Mapping[str, Any]) -> str:
    """A GraphQL error union member as one readable line (type, message, config errors, stack head)."""
    parts = [str(result.get("__typename", "?")), str(result.get("message", ""))]
    parts += [e.get("message", "") for e in result.get("errors", []) or []]
    if result.get("stack"):
        parts.append("".join(result["stack"])[-2000:])
    return " | ".join(p for p in parts if p)


@dataclass
class PageCheck:
    """What one page showed: its text when the wait ended, the names never seen, and the screenshot."""

    url: str
    text: str
    missing: list[str]
    screenshot: Path


@contextlib.contextmanager
def headless_chromium(
    profile_dir: Path, log_path: Path, window: tuple[int, int] = (1600, 1100)
) -> Iterator[Any]:
    """Debian's Chromium under chromedriver, fresh profile, downloads refused, nothing fetched from outside."""
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not Path(p).exists()]
    if missing:
        raise AssertionError(
            f"{', '.join(missing)} not found: run `make browser` (installs Debian's chromium and "
            "chromium-driver with apt-get), or set AGENTOMNIA_CHROMIUM / AGENTOMNIA_CHROMEDRIVER"
        )
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError as exc:
        raise AssertionError(
            "selenium is not installed in the venv: run `make install` (dev extras)"
        ) from exc
    # an explicit driver path makes Selenium skip Selenium Manager, which would try to download one
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (*CHROMIUM_FLAGS, f"--user-data-dir={profile_dir}", f"--window-size={window[0]},{window[1]}"):
        options.add_argument(flag)
    downloads = profile_dir / "downloads-refused"
    options.add_experimental_option(
        "prefs", {"download_restrictions": 3, "download.default_directory": str(downloads)}
    )
    driver = webdriver.Chrome(
        options=options, service=Service(executable_path=CHROMEDRIVER, log_output=str(log_path))
    )
    try:
        driver.set_page_load_timeout(120)
        yield driver
    finally:
        driver.quit()


def shown(text: str, name: str) -> bool:
    """Whether the page shows `name`, whole or as the graph's middle-elided label (`enviro…_candidates`)."""
    if name in text:
        return True
    for line in text.splitlines():
        head, sep, rest = line.strip().partition("…")
        if (
            sep
            and "…" not in rest
            and name.startswith(head)
            and name.endswith(rest)
            and len(head + rest) >= 4
        ):
            return True
    return False


def page_text(driver: Any) -> str:
    return str(driver.execute_script("return document.body ? document.body.innerText : ''"))


def wait_for_text(driver: Any, needles: Sequence[str], timeout_s: float) -> list[str]:
    """Poll the rendered text until every needle is shown; the ones still missing when time ran out."""
    deadline = time.monotonic() + timeout_s
    while True:
        missing = [n for n in needles if not shown(page_text(driver), n)]
        if not missing or time.monotonic() > deadline:
            return missing
        time.sleep(1.0)


def visit(
    driver: Any,
    url: str,
    needles: Sequence[str],
    screenshot: Path,
    timeout_s: float = 120.0,
    *,
    ready: Sequence[str] = (),
    action: Callable[[Any], None] | None = None,
    settle_s: float = 2.0,
) -> PageCheck:
    """Open `url`, wait until the page shows every needle (or time runs out), then screenshot it.

    The Dagster UI is a single-page app that fills in after its GraphQL calls return, so the wait
    is on the rendered text rather than on page load. When `action` is given it runs once the
    page shows `ready` (a keyboard shortcut needs the component that listens for it). The
    screenshot is taken either way: a page that never showed its content is the picture most
    worth having.
    """
    driver.get(url)
    deadline = time.monotonic() + timeout_s
    if action is not None:
        wait_for_text(driver, ready, timeout_s)
        action(driver)
    wait_for_text(driver, needles, max(1.0, deadline - time.monotonic()))
    time.sleep(settle_s)  # let the graph finish its zoom animation before the picture
    text = page_text(driver)
    screenshot.parent.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(screenshot))
    screenshot.with_suffix(".txt").write_text(text, encoding="utf-8")
    return PageCheck(
        url=url, text=text, missing=[n for n in needles if not shown(text, n)], screenshot=screenshot
    )


def expand_all_groups(probes: Sequence[str], wait_s: float = 30.0) -> Callable[[Any], None]:
    """An action pressing the asset graph's own shortcut (Alt+E) that expands every collapsed group.

    The shortcut toggles, so it is pressed a second time only when none of `probes` (asset names
    that are no group's name) appeared: the first press came before the graph listened for it.
    """

    def press(driver: Any) -> None:
        from selenium.webdriver.common.action_chains import ActionChains
        from selenium.webdriver.common.keys import Keys

        for _ in range(2):
            time.sleep(1.0)  # the graph mounts its shortcut handler just after its labels render
            ActionChains(driver).key_down(Keys.ALT).send_keys("e").key_up(Keys.ALT).perform()
            if len(wait_for_text(driver, probes, wait_s)) < len(probes):
                return

    return press
