"""Driving `service_app.py` as its users would: many conversations at once, some requests
cancelled by the client mid-run, the service SIGKILLed and restarted, every conversation
continued. Shared by `test_service_load.py` (sized for `make test`) and
`benchmarks/service.py` (`make bench`).

Each service runs in its own subprocess under uvicorn; `drive` runs every conversation of a
`LoadPlan` against it and returns what the clients saw (latencies, acknowledged checkpoints).
A conversation alternates refund turns (a refund waits for approval: say, then approve) and
status turns. A cancelled request (the client gives up after a few milliseconds) and a request
that met a killed service are retried: the service's requests are idempotent.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from helpers import _free_port
from suite_paths import APPS


@dataclass(frozen=True)
class LoadPlan:
    threads: int
    turns: int
    concurrency: int
    cancel_rate: float
    kill_after: int | None
    """Acknowledged requests after which the service is SIGKILLed and restarted (None: never)."""
    seed: int = 30
    save_latency_ms: float = 0.0
    """Added to each checkpoint save by the service (see service_app.py)."""


@dataclass
class Service:
    """One instance of the service app, restartable; each start writes its own span file."""

    mode: str
    database_url: str
    workdir: Path
    save_latency_ms: float = 0.0
    port: int = field(default_factory=_free_port)
    process: subprocess.Popen[bytes] | None = None
    starts: int = 0
    ready: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def span_file(self, start: int) -> Path:
        return self.workdir / f"{self.mode}-spans-{start}.jsonl"

    def span_files(self) -> list[Path]:
        return [self.span_file(i) for i in range(self.starts) if self.span_file(i).exists()]

    async def start(self) -> None:
        env = {
            **os.environ,
            "OTEL_BSP_SCHEDULE_DELAY": "200",
            "PYTHONPATH": str(APPS),
            "DESK_SAVE_LATENCY_MS": str(self.save_latency_ms),
        }
        log = open(self.workdir / f"{self.mode}-{self.starts}.log", "wb")  # noqa: SIM115
        self.process = subprocess.Popen(
            [
                sys.executable,
                str(APPS / "service_app.py"),
                self.mode,
                self.database_url,
                str(self.port),
                str(self.span_file(self.starts)),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
        )
        self.starts += 1
        async with httpx.AsyncClient() as client:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                if self.process.poll() is not None:
                    raise RuntimeError(f"{self.mode} service exited: {self.log_text()}")
                try:
                    if (await client.get(self.base + "/stats")).status_code == 200:
                        self.ready.set()
                        return
                except httpx.TransportError:
                    await asyncio.sleep(0.1)
        raise RuntimeError(f"{self.mode} service did not start: {self.log_text()}")

    def kill(self) -> None:
        """SIGKILL: no exception, no cleanup, no span flush."""
        self.ready.clear()
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def stop(self) -> None:
        """SIGTERM: uvicorn shuts down, the app's lifespan flushes its spans."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(timeout=60)

    def log_text(self) -> str:
        return "".join(
            p.read_text(errors="replace")[-3000:]
            for p in sorted(self.workdir.glob(f"{self.mode}-*.log"))
        )


@dataclass
class Seen:
    """What the clients of one service saw."""

    latencies: list[float] = field(default_factory=list)
    """Seconds of each answered request (cancelled and failed attempts excluded)."""
    acknowledged: list[str] = field(default_factory=list)
    """Checkpoint ids the service answered with."""
    cancelled: int = 0
    retried_after_kill: int = 0
    requests: int = 0
    wall_seconds: float = 0.0


async def drive(service: Service, plan: LoadPlan) -> Seen:
    """Run every conversation of `plan` against `service` (restarting it once after
    `plan.kill_after` acknowledged requests)."""
    seen = Seen()
    rng = random.Random(plan.seed)
    gate = asyncio.Semaphore(plan.concurrency)
    killed = asyncio.Event()
    limits = httpx.Limits(max_connections=plan.concurrency * 2)
    started = time.perf_counter()
    async with httpx.AsyncClient(limits=limits, timeout=120) as client:

        async def call(path: str, body: dict[str, Any]) -> dict[str, Any]:
            cancel = rng.random() < plan.cancel_rate
            while True:
                await service.ready.wait()
                timeout = rng.uniform(0.01, 0.5) if cancel else 120
                began = time.perf_counter()
                try:
                    response = await client.post(service.base + path, json=body, timeout=timeout)
                except httpx.TimeoutException:
                    seen.cancelled += 1
                    cancel = False
                    continue
                except httpx.TransportError:
                    seen.retried_after_kill += 1
                    await asyncio.sleep(0.05)
                    continue
                if response.status_code >= 500 and not service.ready.is_set():
                    seen.retried_after_kill += 1
                    continue
                response.raise_for_status()
                seen.latencies.append(time.perf_counter() - began)
                answer: dict[str, Any] = response.json()
                seen.requests += 1
                if answer.get("checkpoint_id"):
                    seen.acknowledged.append(answer["checkpoint_id"])
                kill = plan.kill_after is not None and seen.requests >= plan.kill_after
                if kill and not killed.is_set():
                    killed.set()
                    service.kill()
                    await service.start()
                return answer

        async def conversation(thread_id: str) -> None:
            async with gate:
                for turn in range(plan.turns):
                    refund = turn % 2 == 0
                    text = f"{'refund' if refund else 'status of'} order {thread_id}-{turn}"
                    path = f"/threads/{thread_id}"
                    answer = await call(path + "/say", {"turn": turn, "text": text})
                    while answer["status"] != "done":
                        answer = await call(path + "/approve", {"turn": turn})

        await asyncio.gather(*(conversation(f"desk-{i}") for i in range(plan.threads)))
    seen.wall_seconds = time.perf_counter() - started
    return seen


async def messages_of(service: Service, thread_id: str) -> list[Any]:
    async with httpx.AsyncClient(timeout=60) as client:
        response = await client.get(f"{service.base}/threads/{thread_id}")
        response.raise_for_status()
        result: list[Any] = response.json()
        return result


async def stats_of(service: Service) -> dict[str, Any]:
    async with httpx.AsyncClient(timeout=60) as client:
        response = await client.get(service.base + "/stats")
        response.raise_for_status()
        result: dict[str, Any] = response.json()
        return result


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]
