"""`langgraph-otel compat` and `replay` at scale: their time on a SQLite file of many threads.

The file holds copies of real threads (rows copied with SQL by `tests/support/scale_db.py`):
`tests/apps/release_app.py`'s release-1 threads (parked at an interrupt, finished, SIGKILLed inside
two nodes; 4 templates, prefix ``c-``) for `compat`, and `tests/apps/replay_app.py`'s `create_agent`
travel thread (13 checkpoints; prefix ``r-``) for `replay`. Each command runs once in its own
process through the console script (interpreter start and imports included): wall time, CPU
time and the process's peak RSS.

    .venv/bin/python benchmarks/deploy_safety.py [--threads 10000] [--replay 1000]
"""

from __future__ import annotations

import argparse
import json
import resource
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
APPS = ROOT / "tests" / "apps"
sys.path.insert(0, str(ROOT / "tests" / "support"))
sys.path.insert(0, str(APPS))

import scale_db  # noqa: E402

KINDS = ("parked", "finished", "crashed-write", "crashed-merge")


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def write_templates(path: Path) -> None:
    """The release-1 threads (subprocesses: two die by SIGKILL) and the replay thread."""
    app = str(APPS / "release_app.py")
    backend = f"sqlite:{path}"
    for args in (
        ("write", backend, "tmpl/"),
        ("crash", backend, "write", "tmpl/"),
        ("crash", backend, "merge", "tmpl/"),
    ):
        subprocess.run([sys.executable, app, *args], capture_output=True, timeout=300, check=False)
    from langgraph.checkpoint.sqlite import SqliteSaver
    from opentelemetry.sdk.trace import TracerProvider

    import agents
    import replay_app
    from langgraph.checkpoint.otel import instrument

    conn = sqlite3.connect(path, check_same_thread=False)
    graph = replay_app.build(
        checkpointer=instrument(SqliteSaver(conn), tracer_provider=TracerProvider())
    )
    graph.invoke(agents.question(), agents.thread("tmpl/trip"))
    conn.close()


def timed(args: list[str]) -> dict[str, float]:
    """Run the console script once; wall s, CPU s, peak RSS MB, exit code."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "langgraph.checkpoint.otel", *args],
        capture_output=True,
        text=True,
        cwd=APPS,
        check=False,
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "peak_rss_mb": round(after.ru_maxrss / 1024, 1),
        "exit": done.returncode,
        "stdout_tail": done.stdout.strip().splitlines()[-1:] if done.stdout else [],
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=10_000)
    parser.add_argument("--replay", type=int, default=1_000, help="threads replayed per command")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "deploy.db"
        log("writing the templates")
        write_templates(path)
        scale_db.copy_threads(path, args.threads, "c-", [f"tmpl/{k}" for k in KINDS])
        scale_db.copy_threads(path, args.threads, "r-", ["tmpl/trip"])
        url = f"sqlite:///{path}"
        results: dict[str, object] = {"threads": args.threads, "replayed": args.replay}
        for release in ("release_1", "remove_node", "toggle_defer"):
            log(f"compat {release}")
            results[f"compat {release}"] = timed(
                ["compat", f"release_app:{release}", "-s", url, "--thread-prefix", "c-"]
            )
        threads = [f"r-{i:06d}" for i in range(args.replay)]
        for release in ("release_1", "route"):
            log(f"replay {release}")
            results[f"replay {release}"] = timed(
                ["replay", f"replay_app:{release}", *threads, "-s", url, "--json"]
            )
        print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
