"""Prometheus alert rules (alerts/prometheus/): promtool checks and unit tests, and a live run.

The live test starts a real Prometheus (Debian package `prometheus`, provided by
scripts/tools/prometheus.sh) on a free loopback port. It scrapes the OpenTelemetry Prometheus
exporter served from this test process while a real instrumented graph diverges, and waits for
the divergence alert to reach `firing` in /api/v1/alerts. It loads the shipped rules file as it
is: the divergence alert has no `for`, and its "new series" branch (`unless ... offset 5m`) is
what fires for a counter that the exporter creates with its first divergence, so no test-only
variant with shorter windows is needed. Only the global scrape and evaluation intervals are 1s.
A second thread, written under one schema version and continued under another, makes the
schema-mismatch alert fire the same way; a thread continued by a graph with a node added, and
a thread taken by two runs at once, make the graph-change and concurrent-write alerts fire;
and the run-end growth histograms appear.
"""

from __future__ import annotations

import inspect
import json
import re
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml
from langgraph.checkpoint.memory import InMemorySaver
from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from prometheus_client import REGISTRY, CollectorRegistry, start_http_server

import graphs
from helpers import in_ci, terminate
from langgraph.checkpoint.otel import instrument
from langgraph.checkpoint.otel.retention.telemetry import RetentionTelemetry
from suite_paths import REPO as ROOT

RULES_DIR = ROOT / "alerts" / "prometheus"
RULES = RULES_DIR / "langgraph-checkpoint.rules.yml"
RULE_TESTS = RULES_DIR / "tests.yml"
JOB = "langgraph-app"
DIVERGENCE_ALERT = "LangGraphCheckpointDivergence"
SCHEMA_ALERT = "LangGraphSchemaMismatch"
GRAPH_ALERT = "LangGraphGraphChanged"
CONCURRENT_ALERT = "LangGraphConcurrentWrites"
WINDOW_ALERT = "LangGraphContextWindowNearlyFull"
ALERTS = [
    "LangGraphCheckpointDivergence",
    "LangGraphCheckpointResumeStorm",
    "LangGraphCheckpointWriteLatencyHigh",
    "LangGraphCheckpointChannelGrowth",
    "LangGraphTaskErrorRateHigh",
    "LangGraphSchemaMismatch",
    "LangGraphGraphChanged",
    "LangGraphConcurrentWrites",
    "LangGraphThreadTooManyCheckpoints",
    "LangGraphThreadTooManyBytes",
    "LangGraphChannelGrowsWithoutBound",
    "LangGraphThreadGrowsWithoutRetention",
    "LangGraphContextWindowNearlyFull",
]
RULE_COUNT = 20  # 7 recording rules and the alerts
# Bucket boundaries of the run-end histograms (langgraph.checkpoint.thread.checkpoints and
# langgraph.checkpoint.thread.written, which uses the byte buckets) that rules compare with.
THREAD_CHECKPOINT_BUCKETS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000)
THREAD_CHECKPOINT_BUCKETS += (20000, 50000, 100000)
BYTE_BUCKETS = tuple(1024 * 4**k for k in range(11))  # 1 KiB .. 1 GiB
WINDOW_SHARE_BUCKETS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1.0)
WINDOW_SHARE_BUCKETS += (1.25, 1.5, 2.0)  # langgraph.checkpoint.messages.window_share
LIVE_DEADLINE_S = 60.0

T = TypeVar("T")


def require(tool: str) -> str:
    path = shutil.which(tool)
    if path:
        return path
    message = (
        f"`{tool}` not found: run `bash scripts/tools/prometheus.sh` "
        "(Debian package `prometheus`) to install it"
    )
    if in_ci():
        pytest.fail(f"CI=true, so this is a failure, not a skip: {message}", pytrace=False)
    pytest.skip(message)


# --- promtool ---------------------------------------------------------------------------------


def run_promtool(*args: str) -> str:
    promtool = require("promtool")
    result = subprocess.run(
        [promtool, *args], capture_output=True, text=True, timeout=60, cwd=ROOT, check=False
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"promtool {' '.join(args)} failed:\n{output}"
    return output


def test_promtool_check_rules() -> None:
    output = run_promtool("check", "rules", str(RULES))
    assert "SUCCESS" in output, output
    assert f"{RULE_COUNT} rules found" in output, output


def test_promtool_unit_tests() -> None:
    output = run_promtool("test", "rules", str(RULE_TESTS))
    assert "SUCCESS" in output, output


def test_every_alert_is_unit_tested_and_documented() -> None:
    alerts = [
        rule["alert"]
        for group in yaml.safe_load(RULES.read_text())["groups"]
        for rule in group["rules"]
        if "alert" in rule
    ]
    tested = {
        case["alertname"]
        for test in yaml.safe_load(RULE_TESTS.read_text())["tests"]
        for case in test.get("alert_rule_test", [])
    }
    readme = (ROOT / "alerts" / "README.md").read_text()
    assert alerts == ALERTS
    for alert in alerts:
        assert alert in tested, f"{alert} has no promtool unit test"
        assert f"### {alert}" in readme, f"{alert} is not documented in alerts/README.md"
    for group in yaml.safe_load(RULES.read_text())["groups"]:
        for rule in group["rules"]:
            if "alert" in rule:
                assert rule["labels"]["severity"] in {"warning", "critical"}
                assert {"summary", "description", "runbook"} <= set(rule["annotations"])


def alert_rules() -> dict[str, dict[str, Any]]:
    return {
        rule["alert"]: rule
        for group in yaml.safe_load(RULES.read_text())["groups"]
        for rule in group["rules"]
        if "alert" in rule
    }


def grouping_labels(expr: str, recorded: dict[str, str]) -> set[str]:
    """The labels `by (...)` keeps in expr and in the recording rules it reads."""
    exprs = [expr] + [body for name, body in recorded.items() if name in expr]
    return {
        label.strip()
        for text in exprs
        for group in re.findall(r"\bby\s*\(([^)]*)\)", text)
        for label in group.split(",")
    } - {"le", ""}


def test_every_alert_is_shown_firing_and_quiet() -> None:
    """Each alert has a promtool case where it fires and one where it does not; a firing case
    expects the rule's severity and only labels the rule's aggregation keeps."""
    rules = alert_rules()
    recorded = {
        rule["record"]: rule["expr"]
        for group in yaml.safe_load(RULES.read_text())["groups"]
        for rule in group["rules"]
        if "record" in rule
    }
    cases: dict[str, list[list[dict[str, Any]]]] = {}
    for test in yaml.safe_load(RULE_TESTS.read_text())["tests"]:
        for case in test.get("alert_rule_test", []):
            cases.setdefault(case["alertname"], []).append(case["exp_alerts"])
    for alert, rule in rules.items():
        fired = [a for expected in cases[alert] for a in expected]
        assert fired, f"{alert} is never shown firing"
        assert [] in cases[alert], f"{alert} is never shown quiet"
        kept = grouping_labels(rule["expr"], recorded)
        for expected in fired:
            assert expected["exp_labels"]["severity"] == rule["labels"]["severity"]
            assert set(expected["exp_labels"]) - {"severity"} == kept, alert
            assert expected["exp_annotations"]["runbook"] == rule["annotations"]["runbook"]


def test_new_alerts_read_the_new_series() -> None:
    rules = alert_rules()
    expected = {
        "LangGraphSchemaMismatch": "langgraph_checkpoint_schema_mismatches_total",
        "LangGraphGraphChanged": "langgraph_checkpoint_graph_changes_total",
        "LangGraphConcurrentWrites": "langgraph_checkpoint_concurrent_writes_total",
        "LangGraphThreadTooManyCheckpoints": "langgraph_checkpoint_thread_checkpoints_bucket",
        "LangGraphThreadTooManyBytes": "langgraph_checkpoint_thread_written_bytes_bucket",
        "LangGraphChannelGrowsWithoutBound": (
            "job_langgraph_channel_name:langgraph_checkpoint_channel_size_bytes:p95_rate5m"
        ),
        "LangGraphThreadGrowsWithoutRetention": (
            "langgraph_checkpoint_retention_reclaimed_bytes_total"
        ),
        "LangGraphContextWindowNearlyFull": "langgraph_checkpoint_messages_window_share_bucket",
    }
    for alert, series in expected.items():
        assert series in rules[alert]["expr"], alert
    assert "offset 6h" in rules["LangGraphChannelGrowsWithoutBound"]["expr"]
    for alert in (SCHEMA_ALERT, GRAPH_ALERT, CONCURRENT_ALERT):
        assert "offset 15m" in rules[alert]["expr"], alert  # the new-series branch
    for alert in ("LangGraphThreadTooManyBytes", "LangGraphChannelGrowsWithoutBound"):
        assert "docs/telemetry.md (Checkpoint growth)" in rules[alert]["annotations"]["runbook"]
    assert "docs/telemetry.md (Schema versions)" in rules[SCHEMA_ALERT]["annotations"]["runbook"]
    assert "docs/telemetry.md (Graph structure)" in rules[GRAPH_ALERT]["annotations"]["runbook"]
    runbook = rules[CONCURRENT_ALERT]["annotations"]["runbook"]
    assert "docs/telemetry.md (Concurrent writes)" in runbook


def go_float(value: float) -> str:
    """Go's strconv.FormatFloat(value, 'g', -1, 64): shortest digits, exponent from 1e6."""
    sign, digits, exponent = Decimal(repr(float(value))).normalize().as_tuple()
    assert not sign and isinstance(exponent, int)
    text = "".join(map(str, digits))
    exp = len(digits) + exponent - 1
    if exp < -4 or exp >= 6:
        mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
        return f"{mantissa}e{'+' if exp >= 0 else '-'}{abs(exp):02d}"
    return format(Decimal(repr(float(value))).normalize(), "f")


def le_spellings(boundary: float) -> set[str]:
    """How one bucket boundary reaches Prometheus as `le`: the Python exporter (str(float)),
    the Collector's remote write (FormatFloat 'f' -1), Prometheus 3's normalisation
    ('g' -1, with ".0" when there is no dot or exponent)."""
    go = go_float(boundary)
    plain = format(Decimal(repr(float(boundary))).normalize(), "f")
    return {str(float(boundary)), plain, go if ("." in go or "e" in go) else go + ".0"}


def test_go_float_formatting() -> None:
    assert go_float(1000.0) == "1000"
    assert go_float(1048576.0) == "1.048576e+06"
    assert go_float(67108864.0) == "6.7108864e+07"
    assert go_float(0.25) == "0.25"
    assert le_spellings(1000) == {"1000.0", "1000"}
    assert le_spellings(67108864) == {"67108864.0", "67108864", "6.7108864e+07"}


def test_bucket_matchers_are_boundaries_in_every_spelling() -> None:
    """A rule that counts the samples above a bucket compares with a real boundary of that
    histogram, and its `le` regex matches that boundary however the pipeline spells it, and
    no other boundary."""
    buckets = {
        "langgraph_checkpoint_thread_checkpoints_bucket": THREAD_CHECKPOINT_BUCKETS,
        "langgraph_checkpoint_thread_written_bytes_bucket": BYTE_BUCKETS,
        "langgraph_checkpoint_messages_window_share_bucket": WINDOW_SHARE_BUCKETS,
    }
    found = re.findall(r'(\w+_bucket)\{[^}]*\ble=~"((?:[^"\\]|\\.)*)"', rule_expressions())
    assert {metric for metric, _ in found} == set(buckets)
    for metric, quoted in found:
        pattern = quoted.encode().decode("unicode_escape")  # PromQL string -> regex
        matched = [
            b for b in buckets[metric] if any(re.fullmatch(pattern, s) for s in le_spellings(b))
        ]
        assert len(matched) == 1, (metric, pattern, matched)
        for spelling in le_spellings(matched[0]):
            assert re.fullmatch(pattern, spelling), (metric, pattern, spelling)
    assert not re.fullmatch("1000|1000\\.0", "10000.0")  # anchored: the check can fail


# --- live: a real Prometheus scraping a real exporter while a graph diverges -------------------


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def http_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=5) as response:
        return json.loads(response.read().decode())


def poll(what: str, check: Callable[[], T | None], deadline: float, proc: Any = None) -> T:
    """Call `check` until it returns something other than None, or fail at `deadline`."""
    last_error = ""
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            pytest.fail(f"prometheus exited with {proc.returncode} while waiting for {what}")
        try:
            result = check()
        except (OSError, urllib.error.URLError, ValueError) as exc:
            last_error = f" (last error: {exc!r})"
        else:
            if result is not None:
                return result
        time.sleep(0.25)
    pytest.fail(f"timed out waiting for {what}{last_error}")


class Exporter:
    """The app side: an SDK MeterProvider with the OpenTelemetry Prometheus exporter, served
    by prometheus_client on a loopback port. Uses a private registry where the exporter
    supports one (else the global REGISTRY, from which the reader unregisters on shutdown)."""

    def __init__(self) -> None:
        self.port = free_port()
        if "registry" in inspect.signature(PrometheusMetricReader.__init__).parameters:
            self.registry = CollectorRegistry()
            self.reader = PrometheusMetricReader(registry=self.registry)
        else:  # older exporters register with the global registry only
            self.registry = REGISTRY
            self.reader = PrometheusMetricReader()
        self.meter_provider = MeterProvider(
            metric_readers=[self.reader],
            resource=Resource.create({"service.name": "alerts-live-test"}),
        )
        self.tracer_provider = TracerProvider()
        self.server, self.thread = start_http_server(
            self.port, addr="127.0.0.1", registry=self.registry
        )

    def metrics_text(self) -> str:
        url = f"http://127.0.0.1:{self.port}/metrics"
        with urllib.request.urlopen(url, timeout=5) as response:
            return str(response.read().decode())

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)
        self.meter_provider.shutdown()  # the reader unregisters its collector
        self.tracer_provider.shutdown()


class Prometheus:
    """A real Prometheus server on a free loopback port, its data and log in `workdir`."""

    def __init__(self, workdir: Path, target_port: int) -> None:
        self.binary = require("prometheus")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = workdir / "prometheus.log"
        config = {
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "rule_files": [str(RULES)],
            "scrape_configs": [
                {
                    "job_name": JOB,
                    "scrape_interval": "1s",
                    "static_configs": [{"targets": [f"127.0.0.1:{target_port}"]}],
                }
            ],
        }
        self.config_path = workdir / "prometheus.yml"
        self.config_path.write_text(yaml.safe_dump(config))
        self.data = workdir / "data"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with self.log_path.open("wb") as log:
            self.proc = subprocess.Popen(
                [
                    self.binary,
                    f"--config.file={self.config_path}",
                    f"--storage.tsdb.path={self.data}",
                    f"--web.listen-address=127.0.0.1:{self.port}",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
            )

    def api(self, path: str, **params: str) -> Any:
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        body = http_json(f"{self.url}/api/v1/{path}{query}")
        assert body["status"] == "success", body
        return body["data"]

    def log_tail(self) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-30:])
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        if self.proc is not None:
            terminate(self.proc)


@pytest.fixture
def exporter() -> Iterator[Exporter]:
    exp = Exporter()
    try:
        yield exp
    finally:
        exp.close()


@pytest.fixture
def prometheus(tmp_path: Path, exporter: Exporter) -> Iterator[Prometheus]:
    prom = Prometheus(tmp_path, exporter.port)
    try:
        prom.start()
        yield prom
    finally:
        prom.stop()


def rule_expressions() -> str:
    groups = yaml.safe_load(RULES.read_text())["groups"]
    return "\n".join(rule["expr"] for group in groups for rule in group["rules"])


def metric_references(rules_text: str) -> tuple[set[str], set[str]]:
    """Exporter metric names (without _bucket/_sum/_count) and langgraph_* label names the
    rule expressions refer to; recorded series (`level:metric:ops`) are not exporter names."""
    metrics = {
        re.sub(r"_(bucket|sum|count)$", "", name)
        for name in re.findall(r"(?<![:\w])(langgraph_checkpoint_\w+)\b(?!:)", rules_text)
    }
    labels = set(re.findall(r"\b(langgraph_[a-z_]+)\s*(?:=|!=|=~|!~)\s*\"", rules_text))
    for group in re.findall(r"\bby\s*\(([^)]*)\)", rules_text):
        labels |= {label.strip() for label in group.split(",") if label.strip()}
    labels -= {"job", "le"}
    return metrics, labels


def test_divergence_alert_fires_in_a_live_prometheus(
    exporter: Exporter, prometheus: Prometheus
) -> None:
    started = time.monotonic()
    deadline = started + LIVE_DEADLINE_S
    proc = prometheus.proc

    def target_up() -> bool | None:
        targets = prometheus.api("targets")["activeTargets"]
        return True if any(t["health"] == "up" for t in targets) else None

    try:
        poll(
            "prometheus to become ready",
            lambda: http_json(f"{prometheus.url}/api/v1/status/buildinfo"),
            deadline,
            proc,
        )
        poll("the exporter target to be scraped (health up)", target_up, deadline, proc)

        # A real run, then a fork from the checkpoint before `noisy`: the wrapper compares the
        # new branch with the earlier one and counts a `state` divergence.
        saver = instrument(
            InMemorySaver(),
            tracer_provider=exporter.tracer_provider,
            meter_provider=exporter.meter_provider,
        )
        graph = graphs.noisy().compile(checkpointer=saver)
        config: Any = {"configurable": {"thread_id": "live-1"}}
        graph.invoke({"start": 0}, config)
        before_noisy = next(s for s in graph.get_state_history(config) if s.next == ("noisy",))
        graph.invoke(None, before_noisy.config)
        # A thread written under schema version "1", continued by code running version "2"
        # (a deterministic graph: the continue diverges from nothing).
        shared = InMemorySaver()
        for version in ("1", "2"):
            versioned = instrument(
                shared,
                tracer_provider=exporter.tracer_provider,
                meter_provider=exporter.meter_provider,
                schema_version=version,
            )
            versioned_graph = graphs.noisy(deterministic=True).compile(checkpointer=versioned)
            versioned_graph.invoke({"start": 0}, {"configurable": {"thread_id": "live-2"}})
        # A thread continued by the graph with a node added (a graph change on its resume), and
        # a thread taken by two runs at once (a concurrent write).
        inner = graphs.LoadTogether()
        graphs.change_graph_and_write_twice(
            instrument(
                inner,
                tracer_provider=exporter.tracer_provider,
                meter_provider=exporter.meter_provider,
            ),
            inner,
            "live-3",
        )
        # what a retention apply reclaimed (its counters, on the same meter provider)
        retention = RetentionTelemetry(exporter.tracer_provider, exporter.meter_provider)
        with (
            retention.apply(
                policy="keep_last=1", threads=1, saver="InMemorySaver", archive=None
            ) as report,
            report.thread("live-1") as thread,
        ):
            thread.applied(
                checkpoints_removed=3, writes_removed=0, bytes_reclaimed=1024, checkpoints_kept=1
            )
        # a message history near a small context window (the context-cliff histogram)
        chat = graphs.linear().compile(
            checkpointer=instrument(
                InMemorySaver(),
                tracer_provider=exporter.tracer_provider,
                meter_provider=exporter.meter_provider,
                context_window=40,
            )
        )
        chat.invoke(
            graphs.user_input("a question " * 10), {"configurable": {"thread_id": "live-4"}}
        )
        text = exporter.metrics_text()
        assert 'langgraph_checkpoint_divergences_total{langgraph_divergence_kind="state"' in text
        mismatches = [
            line
            for line in text.splitlines()
            if line.startswith("langgraph_checkpoint_schema_mismatches_total{")
        ]
        assert any(
            'langgraph_schema_written_version="1"' in line
            and 'langgraph_schema_running_version="2"' in line
            for line in mismatches
        ), mismatches
        for series in (
            "langgraph_checkpoint_graph_changes_total",
            "langgraph_checkpoint_concurrent_writes_total",
        ):
            assert f'{series}{{langgraph_graph_name="LangGraph"' in text, series

        def divergence_firing() -> dict[str, Any] | None:
            for alert in prometheus.api("alerts")["alerts"]:
                if alert["labels"]["alertname"] == DIVERGENCE_ALERT and alert["state"] == "firing":
                    return dict(alert)
            return None

        alert = poll(f"{DIVERGENCE_ALERT} to be firing", divergence_firing, deadline, proc)
        fired_after = time.monotonic() - started
        print(f"{DIVERGENCE_ALERT} firing {fired_after:.1f}s after Prometheus was started")
        assert alert["labels"]["langgraph_divergence_kind"] == "state"
        assert alert["labels"]["job"] == JOB
        assert alert["labels"]["severity"] == "warning"
        assert alert["annotations"]["summary"] == f"LangGraph run diverged (state) in {JOB}"
        assert float(alert["value"]) == 1.0

        def firing(name: str) -> Callable[[], dict[str, Any] | None]:
            def check() -> dict[str, Any] | None:
                for alert in prometheus.api("alerts")["alerts"]:
                    if alert["labels"]["alertname"] == name and alert["state"] == "firing":
                        return dict(alert)
                return None

            return check

        schema = poll(f"{SCHEMA_ALERT} to be firing", firing(SCHEMA_ALERT), deadline, proc)
        assert schema["labels"]["langgraph_schema_written_version"] == "1"
        assert schema["labels"]["langgraph_schema_running_version"] == "2"
        assert schema["labels"]["job"] == JOB
        assert float(schema["value"]) == 1.0
        for name in (GRAPH_ALERT, CONCURRENT_ALERT):
            fired = poll(f"{name} to be firing", firing(name), deadline, proc)
            assert fired["labels"]["langgraph_graph_name"] == "LangGraph", fired
            assert fired["labels"]["job"] == JOB
            assert float(fired["value"]) == 1.0
        # the context cliff: a new window-share series with puts above 0.9 of the window
        near_full = poll(f"{WINDOW_ALERT} to be firing", firing(WINDOW_ALERT), deadline, proc)
        assert near_full["labels"]["langgraph_saver"] == "InMemorySaver", near_full
        assert near_full["labels"]["job"] == JOB
        assert float(near_full["value"]) == 3.0  # nodes a, b, c: 39, 47 and 55 of 40 tokens

        # runs with one fork, one schema change, one graph change and one concurrent write
        # trip nothing else
        all_firing = {
            a["labels"]["alertname"]
            for a in prometheus.api("alerts")["alerts"]
            if a["state"] == "firing"
        }
        assert all_firing == {
            DIVERGENCE_ALERT,
            SCHEMA_ALERT,
            GRAPH_ALERT,
            CONCURRENT_ALERT,
            WINDOW_ALERT,
        }

        # every rule evaluates without error against the real series
        def all_rules_evaluated() -> list[dict[str, Any]] | None:
            rules = [r for g in prometheus.api("rules")["groups"] for r in g["rules"]]
            evaluated = all(not r["lastEvaluation"].startswith("0001-") for r in rules)
            return rules if evaluated else None

        rules = poll("every rule to be evaluated", all_rules_evaluated, deadline, proc)
        assert len(rules) == RULE_COUNT
        assert [(r["name"], r.get("lastError", "")) for r in rules if r["health"] != "ok"] == []

        # every exporter metric and label the rules name exists in Prometheus after this run
        metrics, labels = metric_references(rule_expressions())
        # all instruments but the whole-state size and the checkpoints retention removed
        assert len(metrics) == 12, metrics
        names = set(prometheus.api("label/__name__/values"))
        seen_labels: set[str] = set()
        for metric in sorted(metrics):
            series_names = {n for n in names if re.fullmatch(rf"{metric}(_bucket|_sum|_count)?", n)}
            assert series_names, f"{metric} not in Prometheus; it has {sorted(names)}"
            for series in prometheus.api("series", **{"match[]": f'{{__name__=~"{metric}.*"}}'}):
                seen_labels |= set(series)
        assert labels <= seen_labels, labels - seen_labels

        # each `le` regex of the rules selects a bucket the real exporter exposes
        for metric, matcher in re.findall(r'(\w+_bucket)\{[^}]*?(le=~"[^"]*")', rule_expressions()):
            selected = prometheus.api("series", **{"match[]": f"{metric}{{{matcher}}}"})
            assert selected, f"{metric}{{{matcher}}} selects nothing in Prometheus"
        assert fired_after < 40, f"the alert took {fired_after:.1f}s to fire"
    except BaseException:
        print(f"--- prometheus log (tail) ---\n{prometheus.log_tail()}")
        raise
