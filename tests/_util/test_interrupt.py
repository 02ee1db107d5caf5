"""Interrupted commands (rappor._util.interrupt): no temporary file and no worker process survive.

``rappor encode --jobs 2`` runs in a subprocess on an input large enough to take
seconds; once its two workers exist and its temporary output is growing, the test
sends one signal to the parent alone (as ``kill`` does) and then checks the output
directory and every process the parent had started.  Linux only: children are found
through ``/proc``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rappor.formats import write_key_file

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")

REPO = Path(__file__).parents[2]
ROWS = 400_000  # about 8 s of work for two workers on a quiet 2-core machine: the signal lands mid-run


def _stat_fields(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 2:].split()  # after "pid (comm) ": state, ppid, ...


def _children(pid: int) -> set[int]:
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = _stat_fields(int(entry))
            if fields is not None and int(fields[1]) == pid:
                found.add(int(entry))
    return found


def _running(pid: int) -> bool:
    """Alive and not a zombie (an orphan's zombie may wait for a reaper that never comes)."""
    fields = _stat_fields(pid)
    return fields is not None and fields[0] not in ("Z", "X")


@pytest.fixture(scope="module")
def workload(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("interrupt")
    (d / "params.csv").write_text("k,h,m,p,q,f\n64,2,64,0.5,0.75,0.5\n")
    with open(d / "in.csv", "w") as fh:
        fh.write("client,value\n")
        fh.writelines(f"u{i},v{i % 100}\n" for i in range(ROWS))
    write_key_file(d / "key", bytes(range(32)))
    return d


def _start_encode(workload: Path, out_dir: Path, *, prelude: str = "") -> tuple[subprocess.Popen[bytes], set[int]]:
    """Start ``rappor encode --jobs 2``; return it once both workers run and its temporary output grows."""
    argv = ["encode", "--params", str(workload / "params.csv"), "--key-file", str(workload / "key"),
            str(workload / "in.csv"), "-o", str(out_dir / "reports.csv"), "--jobs", "2"]
    # As from a terminal: SIGINT and SIGHUP at their defaults.  A process started with them ignored (pytest
    # run in the background by a non-interactive shell, or under nohup) passes that on, and rappor rightly
    # leaves an ignored signal ignored: the run would then finish normally.
    terminal = ("import signal\nsignal.signal(signal.SIGINT, signal.default_int_handler)\n"
                "signal.signal(signal.SIGHUP, signal.SIG_DFL)\n")
    code = f"{terminal}{prelude}\nimport sys\nfrom rappor.cli._main import main\nsys.exit(main({argv!r}))\n"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-c", code], env=env, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        workers = _children(proc.pid)
        temps = list(out_dir.iterdir())
        if len(workers) >= 2 and temps and any(p.stat().st_size > 0 for p in temps if p.exists()):
            return proc, workers
        time.sleep(0.01)
    proc.kill()
    proc.communicate()
    raise AssertionError("encode finished (or stalled) before two workers and a growing output were seen; "
                         "enlarge ROWS")


def _wait_gone(pids: set[int], timeout: float = 10.0) -> set[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        alive = {pid for pid in pids if _running(pid)}
        if not alive:
            return alive
        time.sleep(0.05)
    return {pid for pid in pids if _running(pid)}


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT], ids=lambda s: s.name)
def test_interrupt_encode_jobs_leaves_nothing(workload: Path, tmp_path: Path, signum: signal.Signals) -> None:
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    proc, workers = _start_encode(workload, out_dir)
    proc.send_signal(signum)
    try:
        _, err = proc.communicate(timeout=60)
    finally:  # a hung run (the old ProcessPoolExecutor could hang at exit) must not outlive the test
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    stray = _wait_gone(workers)
    assert proc.returncode == 128 + signum, (proc.returncode, err)
    assert err.decode().strip().endswith("interrupted" if signum == signal.SIGINT else f"interrupted by {signum.name}")
    assert b"Traceback" not in err, err
    assert sorted(p.name for p in out_dir.iterdir()) == []  # no output, no temporary file
    assert not stray, f"worker processes {stray} outlived rappor encode"


@pytest.mark.parametrize("death_signal", [True, False], ids=["pdeathsig", "watchdog-only"])
def test_interrupt_workers_die_with_a_killed_parent(workload: Path, tmp_path: Path, death_signal: bool) -> None:
    """SIGKILL cannot be caught: the workers notice and exit too, through PR_SET_PDEATHSIG or,
    where that is not available, their watchdog thread alone."""
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    prelude = "" if death_signal else "import rappor._util.interrupt as i\ni.set_parent_death_signal = lambda: False"
    proc, workers = _start_encode(workload, out_dir, prelude=prelude)
    proc.kill()
    proc.communicate(timeout=60)
    assert not _wait_gone(workers, timeout=5.0)


def test_interrupt_killed_worker_is_a_clean_error(workload: Path, tmp_path: Path) -> None:
    """A worker killed from outside (the OOM killer, say): one error line, exit 1, nothing left behind."""
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    proc, workers = _start_encode(workload, out_dir)
    victim, *others = sorted(workers)
    os.kill(victim, signal.SIGKILL)
    try:
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 1, err
    assert err.decode().startswith("rappor: error: a worker process ended without returning its result "
                                   "(exit status -9"), err
    assert sorted(p.name for p in out_dir.iterdir()) == []
    assert not _wait_gone(set(others))


@pytest.mark.parametrize("discover", [True, False], ids=["discover", "full-strings"])
def test_interrupt_simulate_leaves_no_empty_output_directory(tmp_path: Path, discover: bool) -> None:
    """SIGINT while simulate works, after it made --out DIR (and a parent) and before it wrote into them:
    both are removed (an empty simd/ was left behind)."""
    out = tmp_path / "parent" / "simd"
    argv = ["simulate", "--out", str(out), "--no-report", "--clients", "400000"] + (["--discover"] if discover else [])
    code = ("import signal\nsignal.signal(signal.SIGINT, signal.default_int_handler)\n"
            f"import sys\nfrom rappor.cli import main\nsys.exit(main({argv!r}))\n")
    proc = subprocess.Popen([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(REPO)},
                            stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None and not out.exists():
        time.sleep(0.01)
    assert proc.poll() is None and out.exists() and not list(out.iterdir()), "simulate ended before the signal"
    proc.send_signal(signal.SIGINT)
    err = proc.communicate(timeout=60)[1].decode()
    assert proc.returncode == 130 and "rappor: interrupted" in err, (proc.returncode, err)
    assert not (tmp_path / "parent").exists()
