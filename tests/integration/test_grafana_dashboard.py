"""The Grafana dashboard (dashboards/grafana/langgraph-checkpoints.json).

- Type check: tsc against npm ``@grafana/schema`` (``satisfies Dashboard``), and proof that the check
  bites: a broken copy of the dashboard must fail tsc.
- Names: every PromQL expression uses only the Prometheus series and labels the OpenTelemetry
  Prometheus exporter really produces from the library's metrics, and every TraceQL query only span
  names and attributes from ``langgraph.checkpoint.otel.names``; the allowlist itself is checked
  against a real exporter run.
- Structure: unique panel ids, no overlapping panels, every variable used is defined and every
  defined variable is used, every query goes to the data source variable of its kind.

The tsc tests need node and npm (``scripts/tools/grafana-schema.sh`` installs the pinned packages);
without them they are skipped, which is a failure under ``CI=true``.
"""

from __future__ import annotations

import copy
import json
import operator
import random
import re
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, NoReturn, TypedDict

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from prometheus_client import CollectorRegistry, generate_latest, start_http_server
from prometheus_client.parser import text_string_to_metric_families

import graphs
from helpers import EVENT_ONLY_ATTRIBUTES, in_ci
from langgraph.checkpoint.otel import instrument, names
from langgraph.checkpoint.otel.retention.telemetry import RetentionTelemetry
from suite_paths import REPO as ROOT

GRAFANA = ROOT / "dashboards" / "grafana"
DASHBOARD_FILE = GRAFANA / "langgraph-checkpoints.json"
CHECK = GRAFANA / "check"
TSC = CHECK / "node_modules" / ".bin" / "tsc"
INSTALL_SCRIPT = ROOT / "scripts" / "tools" / "grafana-schema.sh"

# --------------------------------------------------------------------------------------------
# The allowlist: Prometheus names of the library's metrics
# --------------------------------------------------------------------------------------------
# Obtained by running instrumented graphs (InMemorySaver; a plain run, a continue, an error resume,
# a fork that diverges, a failing inner call, a thread continued under another schema version, a
# thread continued by the graph with a node added, a thread taken by two runs at once) with an SDK
# MeterProvider whose reader is
# opentelemetry-exporter-prometheus's PrometheusMetricReader (0.66b2, SDK 1.45.2), then reading the
# exposition text (first over prometheus_client.start_http_server's /metrics, here through
# generate_latest). The Collector's prometheus and prometheusremotewrite exporters apply the same
# OTel -> Prometheus translation (unit suffixes `_seconds` / `_bytes`, `_total` on counters, dots in
# attribute keys -> `_`). test_allowlist_is_what_the_prometheus_exporter_emits repeats the run.

# metric family -> its labels (the instrument's attributes, translated)
FAMILY_LABELS: dict[str, frozenset[str]] = {
    "langgraph_checkpoint_operation_duration_seconds": frozenset(
        {"langgraph_operation", "langgraph_saver", "error_type"}
    ),
    "langgraph_checkpoint_size_bytes": frozenset({"langgraph_saver"}),
    "langgraph_checkpoint_channel_size_bytes": frozenset({"langgraph_channel_name"}),
    "langgraph_checkpoint_resumes_total": frozenset({"langgraph_resume_kind"}),
    "langgraph_checkpoint_divergences_total": frozenset({"langgraph_divergence_kind"}),
    "langgraph_checkpoint_task_outcomes_total": frozenset(
        {"langgraph_task_node", "langgraph_task_outcome"}
    ),
    "langgraph_checkpoint_schema_mismatches_total": frozenset(
        {"langgraph_schema_written_version", "langgraph_schema_running_version"}
    ),
    "langgraph_checkpoint_graph_changes_total": frozenset({"langgraph_graph_name"}),
    "langgraph_checkpoint_concurrent_writes_total": frozenset({"langgraph_graph_name"}),
    "langgraph_checkpoint_thread_checkpoints": frozenset({"langgraph_saver"}),
    "langgraph_checkpoint_thread_written_bytes": frozenset({"langgraph_saver"}),
    "langgraph_checkpoint_retention_checkpoints_removed_total": frozenset(
        {"langgraph_retention_by", "langgraph_saver"}
    ),
    "langgraph_checkpoint_retention_reclaimed_bytes_total": frozenset(
        {"langgraph_retention_by", "langgraph_saver"}
    ),
    "langgraph_checkpoint_messages": frozenset({"langgraph_saver"}),
    "langgraph_checkpoint_messages_tokens": frozenset({"langgraph_saver"}),
    "langgraph_checkpoint_messages_window_share": frozenset({"langgraph_saver"}),
}
HISTOGRAMS = {
    "langgraph_checkpoint_operation_duration_seconds",
    "langgraph_checkpoint_size_bytes",
    "langgraph_checkpoint_channel_size_bytes",
    "langgraph_checkpoint_thread_checkpoints",
    "langgraph_checkpoint_thread_written_bytes",
    "langgraph_checkpoint_messages",
    "langgraph_checkpoint_messages_tokens",
    "langgraph_checkpoint_messages_window_share",
}
# on every series: the instrumentation scope, added by the exporter
SCOPE_LABELS = frozenset({"otel_scope_name", "otel_scope_version", "otel_scope_schema_url"})
# added on the way into Prometheus: by the scrape (job = scrape job name, instance = host:port) or by
# the Collector's Prometheus exporters (job = [service.namespace/]service.name,
# instance = service.instance.id); the dashboard's service variable is `job`
TARGET_LABELS = frozenset({"job", "instance"})


def series_labels() -> dict[str, frozenset[str]]:
    """Every series name the dashboard may query -> the labels it carries."""
    out: dict[str, frozenset[str]] = {}
    for family, labels in FAMILY_LABELS.items():
        base = labels | SCOPE_LABELS | TARGET_LABELS
        if family in HISTOGRAMS:
            out[f"{family}_bucket"] = base | {"le"}
            out[f"{family}_sum"] = base
            out[f"{family}_count"] = base
        else:
            out[family] = base
    return out


SERIES = series_labels()

# --------------------------------------------------------------------------------------------
# The allowlist: TraceQL names, from names.py
# --------------------------------------------------------------------------------------------

NOT_ATTRIBUTES = {"SCOPE", "METADATA_KEY", "META_FORMAT", "META_STATE_HASH", "META_CHANNELS"}
NOT_ATTRIBUTES |= {"META_NODES", "META_RESUME", "META_SCHEMA", "META_LINEAGE", "UNVERSIONED"}
ALL_ATTRIBUTES = {
    value
    for key, value in vars(names).items()
    if key.isupper()
    and isinstance(value, str)
    and key not in NOT_ATTRIBUTES
    and not key.startswith(("SPAN_", "METRIC_", "EVENT_"))
}
EVENT_ATTRIBUTES = {
    names.CHANNEL_NAME,
    names.CHANNEL_HASH,
    names.CHANNEL_SIZE_BYTES,
    names.CHANNEL_SUMMARY,
    *EVENT_ONLY_ATTRIBUTES,
}
LINK_ATTRIBUTES = {names.LINK_TYPE}
TRACEQL_SCOPES: dict[str, set[str]] = {
    "span": ALL_ATTRIBUTES - EVENT_ATTRIBUTES - LINK_ATTRIBUTES,
    # the running structure hash is on run spans, puts and resume spans, and on the event
    "event": EVENT_ATTRIBUTES | {names.GRAPH_STRUCTURE_HASH},
    "link": LINK_ATTRIBUTES,
    # OpenTelemetry resource semantic conventions, not the library's: the service filter
    "resource": {"service.name"},
}
SPAN_NAMES = set(names.spans().values())

# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------


def load_dashboard() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(DASHBOARD_FILE.read_text())
    return data


def all_panels(dashboard: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for panel in dashboard.get("panels", []):
        yield panel
        yield from panel.get("panels", [])


def targets(dashboard: dict[str, Any], ds_type: str) -> Iterator[tuple[dict[str, Any], str]]:
    """(panel, query) for every query of that data source type."""
    for panel in all_panels(dashboard):
        for target in panel.get("targets", []):
            if target.get("datasource", panel.get("datasource", {})).get("type") == ds_type:
                yield panel, target["expr"] if ds_type == "prometheus" else target["query"]


_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_RANGE = re.compile(r"\[[^\]]*\]")
_SELECTOR = re.compile(r"\{([^}]*)\}")
_MATCHER = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*(?:=~|!~|!=|=)")
_GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)")
_IDENT = re.compile(r"(?<![\w.$])[A-Za-z_:][A-Za-z0-9_:]*")
_PROMQL_KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool"}
_PROMQL_KEYWORDS |= {"and", "or", "unless", "offset"}


def promql_names(expr: str) -> tuple[set[str], set[str]]:
    """(metric names, label names) referenced by a PromQL expression."""
    text = _RANGE.sub(" ", _STRING.sub('""', expr))
    labels: set[str] = set()
    for body in _SELECTOR.findall(text):
        labels |= set(_MATCHER.findall(body))
    text = _SELECTOR.sub(" ", text)
    for body in _GROUPING.findall(text):
        labels |= {label.strip() for label in body.split(",") if label.strip()}
    text = _GROUPING.sub(" ", text)
    metrics = {
        m.group()
        for m in _IDENT.finditer(text)
        if m.group() not in _PROMQL_KEYWORDS and not text[m.end() :].lstrip().startswith("(")
    }
    return metrics, labels


def promql_problems(expr: str) -> list[str]:
    metrics, labels = promql_names(expr)
    problems = [f"unknown series {m!r}" for m in sorted(metrics - SERIES.keys())]
    known = [SERIES[m] for m in metrics if m in SERIES]
    if not metrics:
        problems.append("no series")
    elif known:
        allowed = frozenset.intersection(*known)
        problems += [
            f"label {label!r} not on {sorted(metrics)}" for label in sorted(labels - allowed)
        ]
    if "histogram_quantile" in expr and not (
        all(m.endswith("_bucket") for m in metrics) and "le" in labels
    ):
        problems.append("histogram_quantile needs _bucket series aggregated by le")
    return problems


_TRACEQL_NAME = re.compile(r'(?<![\w.:])name\s*(?:=|!=|=~)\s*"([^"]*)"')
_TRACEQL_ATTR = re.compile(r"(?<![\w.])(span|resource|event|link)\.([A-Za-z_][\w.]*)")


def traceql_problems(query: str) -> list[str]:
    problems = [
        f"unknown span name {name!r}"
        for name in _TRACEQL_NAME.findall(query)
        if name not in SPAN_NAMES
    ]
    for scope, attribute in _TRACEQL_ATTR.findall(_STRING.sub('""', query)):
        if attribute not in TRACEQL_SCOPES[scope]:
            problems.append(f"unknown {scope} attribute {attribute!r}")
    if not _TRACEQL_NAME.findall(query) and not _TRACEQL_ATTR.findall(query):
        problems.append("references no span name or attribute")
    return problems


def _skip_or_fail(reason: str) -> NoReturn:
    if in_ci():
        pytest.fail(f"CI=true, so this is a failure, not a skip: {reason}", pytrace=False)
    pytest.skip(reason)


_VARIABLE = re.compile(r"\$\{(\w+)(?::[^}]*)?\}|\$(\w+)|\[\[(\w+)(?::[^\]]*)?\]\]")


def variables_in(value: Any) -> set[str]:
    """Dashboard variables referenced anywhere in value (Grafana's own $__ variables left out)."""
    if isinstance(value, str):
        found = {next(g for g in m.groups() if g) for m in _VARIABLE.finditer(value)}
        return {name for name in found if not name.startswith("__")}
    if isinstance(value, dict):
        return set().union(*(variables_in(v) for v in value.values()))
    if isinstance(value, list):
        return set().union(*(variables_in(v) for v in value))
    return set()


# --------------------------------------------------------------------------------------------
# The names: PromQL
# --------------------------------------------------------------------------------------------


def test_promql_parser_sees_metrics_and_labels() -> None:
    metrics, labels = promql_names(
        'histogram_quantile(0.95, sum by (le, langgraph_saver) (rate(a_bucket{job=~"$x", '
        'b="c"}[$__rate_interval]))) / on (job) group_left b_total offset 5m * 1e3'
    )
    assert metrics == {"a_bucket", "b_total"}
    assert labels == {"le", "langgraph_saver", "job", "b"}
    # the checks bite: a dotted or suffix-less name, a label the series lacks
    assert promql_problems("rate(langgraph_checkpoint_resumes[5m])") == [
        "unknown series 'langgraph_checkpoint_resumes'"
    ]
    assert promql_problems(
        "sum by (langgraph_saver) (rate(langgraph_checkpoint_channel_size_bytes_count[5m]))"
    ) == ["label 'langgraph_saver' not on ['langgraph_checkpoint_channel_size_bytes_count']"]
    assert promql_problems("histogram_quantile(0.5, rate(langgraph_checkpoint_size_bytes_sum[1m]))")


def test_every_promql_expression_uses_emitted_series_and_labels() -> None:
    dashboard = load_dashboard()
    exprs = [(panel["title"], expr) for panel, expr in targets(dashboard, "prometheus")]
    for variable in dashboard["templating"]["list"]:
        if variable["type"] == "query":
            match = re.fullmatch(r"label_values\((?:(.*),\s*)?(\w+)\)", variable["query"])
            assert match, variable["query"]
            selector, label = match.groups()
            exprs.append((f"variable {variable['name']}", f"sum by ({label}) ({selector})"))
    assert len(exprs) > 15
    problems = {f"{title}: {expr}": promql_problems(expr) for title, expr in exprs}
    assert {k: v for k, v in problems.items() if v} == {}
    used = set().union(*(promql_names(expr)[0] for _, expr in exprs))
    families = {re.sub(r"_(bucket|sum|count)$", "", m) for m in used}
    assert families == FAMILY_LABELS.keys(), "every metric of the library is charted"


def test_every_traceql_query_uses_names_from_names_py() -> None:
    dashboard = load_dashboard()
    queries = [(panel["title"], query) for panel, query in targets(dashboard, "tempo")]
    assert {title for title, _ in queries} == {
        "Recent resumes",
        "Recent divergences",
        "Tool calls started again (possible duplicates)",
    }
    problems = {f"{title}: {query}": traceql_problems(query) for title, query in queries}
    assert {k: v for k, v in problems.items() if v} == {}
    text = " ".join(query for _, query in queries)
    assert f'name = "{names.SPAN_RESUME}"' in text
    assert f"span.{names.DIVERGENCE_DETECTED} = true" in text
    assert f'name = "{names.SPAN_TOOL_START}" && span.{names.TOOL_RETRY} = true' in text
    assert f"span.{names.TOOL_IDEMPOTENCY_KEY}" in text
    # the checks bite
    assert traceql_problems('{ name = "langgraph.checkpoint.resumed" }')
    assert traceql_problems("{ span.langgraph.divergence.kind = 'state' }")
    assert traceql_problems("{ span.langgraph.resume.knd = 1 }")
    assert not traceql_problems('{ event.langgraph.divergence.kind = "state" }')
    assert traceql_problems("{ span.langgraph.schema.written_version = 1 }")  # an event's
    assert traceql_problems('{ name = "langgraph.tool.started" }')


# The panels of the schema and growth metrics: title -> (series every query reads, grouping).
GROWTH_PANELS = {
    "Schema mismatches on resume": (
        "langgraph_checkpoint_schema_mismatches_total",
        {"langgraph_schema_written_version", "langgraph_schema_running_version"},
    ),
    "Checkpoints per thread (at run end)": (
        "langgraph_checkpoint_thread_checkpoints_bucket",
        {"le", "langgraph_saver"},
    ),
    "Bytes written per thread (at run end)": (
        "langgraph_checkpoint_thread_written_bytes_bucket",
        {"le", "langgraph_saver"},
    ),
}


def row_panels(dashboard: dict[str, Any], title: str) -> list[str]:
    """Titles of the panels between the row `title` and the next row (top-level panels)."""
    top = dashboard["panels"]
    start = next(i for i, p in enumerate(top) if p["type"] == "row" and p["title"] == title)
    rows_y = sorted(p["gridPos"]["y"] for p in top if p["type"] == "row")
    y0 = top[start]["gridPos"]["y"]
    y1 = next((y for y in rows_y if y > y0), float("inf"))
    return [p["title"] for p in top if p["type"] != "row" and y0 < p["gridPos"]["y"] < y1]


def test_growth_panels_chart_the_new_metrics() -> None:
    dashboard = load_dashboard()
    panels = {panel["title"]: panel for panel in all_panels(dashboard)}
    for title, (series, grouping) in GROWTH_PANELS.items():
        panel = panels[title]
        exprs = [target["expr"] for target in panel["targets"]]
        assert exprs, title
        for expr in exprs:
            metrics, labels = promql_names(expr)
            assert metrics == {series}, (title, expr)
            assert grouping <= labels, (title, expr)
            assert "$__rate_interval" in expr and 'job=~"$service"' in expr, (title, expr)
        if series.endswith("_bucket"):  # p50 / p95 / p99, filtered by saver
            assert [expr.split(",")[0] for expr in exprs] == [
                f"histogram_quantile({q}" for q in ("0.5", "0.95", "0.99")
            ], title
            assert all('langgraph_saver=~"$saver"' in expr for expr in exprs), title
    assert sorted(row_panels(dashboard, "Schema versions and thread growth")) == sorted(
        GROWTH_PANELS
    )
    units = {title: panels[title]["fieldConfig"]["defaults"]["unit"] for title in GROWTH_PANELS}
    assert units == {
        "Schema mismatches on resume": "short",
        "Checkpoints per thread (at run end)": "short",
        "Bytes written per thread (at run end)": "bytes",
    }


# Bytes written per channel: the channel-size histogram records each changed channel's size at
# every write, so the rate of its _sum is the bytes written per second to that channel.
CHANNEL_BYTES_PANEL = "Bytes written / s by channel (top 10)"
CHANNEL_BYTES_EXPR = (
    "topk(10, sum by (langgraph_channel_name) "
    '(rate(langgraph_checkpoint_channel_size_bytes_sum{job=~"$service"}[$__rate_interval])))'
)


# The deploy-safety panels: title -> the series their one query reads, by graph name.
DEPLOY_PANELS = {
    "Graph changes on resume": "langgraph_checkpoint_graph_changes_total",
    "Concurrent writes": "langgraph_checkpoint_concurrent_writes_total",
}


def test_deploy_safety_panels_chart_graph_changes_and_concurrent_writes() -> None:
    dashboard = load_dashboard()
    panels = {panel["title"]: panel for panel in all_panels(dashboard)}
    for title, series in DEPLOY_PANELS.items():
        panel = panels[title]
        (expr,) = [target["expr"] for target in panel["targets"]]
        assert expr == (
            f"sum by (langgraph_graph_name) (increase({series}"
            '{job=~"$service"}[$__rate_interval]))'
        ), title
        assert panel["fieldConfig"]["defaults"]["unit"] == "short", title
        assert panel["targets"][0]["legendFormat"] == "{{langgraph_graph_name}}", title
    assert sorted(row_panels(dashboard, "Deploy safety")) == sorted(DEPLOY_PANELS)


# The retention panels: title -> the series their one query reads.
RETENTION_PANELS = {
    "Bytes reclaimed by retention": "langgraph_checkpoint_retention_reclaimed_bytes_total",
    "Checkpoints removed by retention": "langgraph_checkpoint_retention_checkpoints_removed_total",
    "Mean checkpoints per thread (at run end, 1h)": "langgraph_checkpoint_thread_checkpoints_sum",
}


def test_retention_panels_chart_what_retention_reclaimed() -> None:
    dashboard = load_dashboard()
    panels = {panel["title"]: panel for panel in all_panels(dashboard)}
    for title, series in RETENTION_PANELS.items():
        (expr,) = [target["expr"] for target in panels[title]["targets"]]
        metrics, _ = promql_names(expr)
        assert series in metrics, (title, expr)
        assert 'langgraph_saver=~"$saver"' in expr, (title, expr)
    for title in list(RETENTION_PANELS)[:2]:  # the command line reports from its own job
        (target,) = panels[title]["targets"]
        assert "job=" not in target["expr"], title
        assert target["legendFormat"] == "{{langgraph_retention_by}} {{langgraph_saver}}", title
    units = {title: panels[title]["fieldConfig"]["defaults"]["unit"] for title in RETENTION_PANELS}
    assert list(units.values()) == ["bytes", "short", "short"]
    assert sorted(row_panels(dashboard, "Retention")) == sorted(RETENTION_PANELS)


def test_bytes_written_per_channel_is_the_channel_size_sum() -> None:
    dashboard = load_dashboard()
    panels = {panel["title"]: panel for panel in all_panels(dashboard)}
    panel = panels[CHANNEL_BYTES_PANEL]
    assert [target["expr"] for target in panel["targets"]] == [CHANNEL_BYTES_EXPR]
    assert panel["fieldConfig"]["defaults"]["unit"] == "Bps"
    assert CHANNEL_BYTES_PANEL in row_panels(dashboard, "State size")
    exprs = [t.get("expr") for p in all_panels(dashboard) for t in p.get("targets", [])]
    assert exprs.count(CHANNEL_BYTES_EXPR) == 1  # one panel for the view


class _Items(TypedDict):
    items: Annotated[list[str], operator.add]
    value: float


class _FailingLoads(InMemorySaver):
    def get_tuple(self, config: Any) -> Any:
        raise TimeoutError("database unavailable")


def exercise(meter_provider: MeterProvider, thread_id: str) -> None:
    """Make every metric and label of the library appear: writes, loads, a node error and its
    resume, a continue, a fork whose replay diverges (state), a failing inner saver call, a
    thread written under schema version "1" and continued by code running "2", a thread
    continued by the graph with a node added (a graph change) and a thread taken by two runs at
    once (a concurrent write)."""
    failures = {"boom": 1}

    def boom(state: _Items) -> dict[str, Any]:
        if failures["boom"]:
            failures["boom"] -= 1
            raise RuntimeError("node failed")
        return {"items": ["boom"]}

    builder = StateGraph(_Items)
    builder.add_node("a", lambda state: {"items": ["a"]})
    builder.add_node("noisy", lambda state: {"value": random.random()})
    builder.add_node("boom", boom)
    builder.add_edge(START, "a")
    builder.add_edge("a", "noisy")
    builder.add_edge("noisy", "boom")
    builder.add_edge("boom", END)

    tracer_provider = TracerProvider()
    try:
        saver = instrument(
            InMemorySaver(), tracer_provider=tracer_provider, meter_provider=meter_provider
        )
        graph = builder.compile(checkpointer=saver)
        config: Any = {"configurable": {"thread_id": thread_id}}
        with pytest.raises(RuntimeError):
            graph.invoke({"items": [], "value": 0.0}, config)
        graph.invoke(None, config)  # error resume
        graph.invoke({"items": ["more"]}, config)  # continue
        after_a = next(s for s in graph.get_state_history(config) if s.next == ("noisy",))
        graph.invoke(None, after_a.config)  # fork: noisy writes another value -> divergence
        failing = instrument(
            _FailingLoads(), tracer_provider=tracer_provider, meter_provider=meter_provider
        )
        with pytest.raises(TimeoutError):
            failing.get_tuple(config)
        shared = InMemorySaver()
        for version in ("1", "2"):
            versioned = instrument(
                shared,
                tracer_provider=tracer_provider,
                meter_provider=meter_provider,
                schema_version=version,
            )
            simple = StateGraph(_Items)
            simple.add_node("a", lambda state: {"items": ["a"]})
            simple.add_edge(START, "a")
            simple.add_edge("a", END)
            simple.compile(checkpointer=versioned).invoke(
                {"items": [], "value": 0.0}, {"configurable": {"thread_id": f"{thread_id}-schema"}}
            )
        together = graphs.LoadTogether()
        graphs.change_graph_and_write_twice(
            instrument(together, tracer_provider=tracer_provider, meter_provider=meter_provider),
            together,
            thread_id,
        )
        # a message history near a small context window (the context-cliff histograms)
        chat = graphs.linear().compile(
            checkpointer=instrument(
                InMemorySaver(),
                tracer_provider=tracer_provider,
                meter_provider=meter_provider,
                context_window=40,
            )
        )
        chat.invoke(
            graphs.user_input("a question " * 10),
            {"configurable": {"thread_id": f"{thread_id}-messages"}},
        )
        # what a retention apply removed and reclaimed (its counters)
        retention = RetentionTelemetry(tracer_provider, meter_provider)
        with (
            retention.apply(
                policy="keep_last=1", threads=1, saver="InMemorySaver", archive=None
            ) as report,
            report.thread(f"{thread_id}-retention") as thread,
        ):
            thread.applied(
                checkpoints_removed=2, writes_removed=1, bytes_reclaimed=512, checkpoints_kept=1
            )
    finally:
        tracer_provider.shutdown()


def test_allowlist_is_what_the_prometheus_exporter_emits() -> None:
    """A real run through PrometheusMetricReader produces exactly the allowlisted series and labels."""
    registry = CollectorRegistry()
    meter_provider = MeterProvider(
        resource=Resource.create({"service.name": "grafana-dashboard-test"}),
        metric_readers=[PrometheusMetricReader(registry=registry)],
    )
    try:
        exercise(meter_provider, "t1")
        text = generate_latest(registry).decode()
    finally:
        meter_provider.shutdown()

    observed: dict[str, set[str]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name.startswith("langgraph_"):
                observed.setdefault(sample.name, set()).update(sample.labels)
    assert observed.keys() == SERIES.keys()
    for name, labels in observed.items():
        assert labels == SERIES[name] - TARGET_LABELS, name
    assert 'langgraph_checkpoint_divergences_total{langgraph_divergence_kind="state"' in text
    mismatches = [
        line
        for line in text.splitlines()
        if line.startswith("langgraph_checkpoint_schema_mismatches_total{")
    ]
    assert len(mismatches) == 1, mismatches
    assert 'langgraph_schema_written_version="1"' in mismatches[0], mismatches
    assert 'langgraph_schema_running_version="2"' in mismatches[0], mismatches
    for family in ("graph_changes", "concurrent_writes"):
        (line,) = [
            line
            for line in text.splitlines()
            if line.startswith(f"langgraph_checkpoint_{family}_total{{")
        ]
        assert 'langgraph_graph_name="LangGraph"' in line and line.endswith(" 1.0"), line
    assert "target_info{" in text and 'service_name="grafana-dashboard-test"' in text


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _prom_query(port: int, query: str) -> list[dict[str, Any]]:
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": query})
    with urllib.request.urlopen(url, timeout=10) as response:
        body = json.load(response)
    assert body["status"] == "success", body
    result: list[dict[str, Any]] = body["data"]["result"]
    return result


def test_every_promql_query_returns_data_from_a_real_prometheus(tmp_path: Path) -> None:
    """A real Prometheus scrapes the app's Prometheus exporter (job = the service); every panel
    query and variable query of the dashboard, with Grafana's variables filled in as Grafana
    would, returns series."""
    if shutil.which("prometheus") is None:
        _skip_or_fail("prometheus not found (scripts/tools/prometheus.sh installs it)")
    service = "grafana-dashboard-test"
    registry = CollectorRegistry()
    meter_provider = MeterProvider(
        resource=Resource.create({"service.name": service}),
        metric_readers=[PrometheusMetricReader(registry=registry)],
    )
    app_port, prom_port = _free_port(), _free_port()
    httpd, _thread = start_http_server(app_port, addr="127.0.0.1", registry=registry)
    config = tmp_path / "prometheus.yml"
    config.write_text(
        "global:\n  scrape_interval: 1s\n"
        f"scrape_configs:\n  - job_name: {service}\n"
        f"    static_configs:\n      - targets: ['127.0.0.1:{app_port}']\n"
    )
    log = (tmp_path / "prometheus.log").open("wb")
    proc = subprocess.Popen(
        [
            "prometheus",
            f"--config.file={config}",
            f"--storage.tsdb.path={tmp_path / 'data'}",
            f"--web.listen-address=127.0.0.1:{prom_port}",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        exercise(meter_provider, "t1")
        deadline = time.monotonic() + 30
        while True:  # scraped at least a few times
            try:
                samples = _prom_query(prom_port, f'count_over_time(up{{job="{service}"}}[1m]) >= 4')
            except OSError:
                samples = []
            if samples:
                break
            assert time.monotonic() < deadline, (tmp_path / "prometheus.log").read_text()
            time.sleep(0.5)
        exercise(meter_provider, "t2")  # counters move between scrapes
        time.sleep(3)

        fill = {
            "$__rate_interval": "1m",
            "$__range": "1h",
            '"$service"': f'"{service}"',
            '"$saver"': '".*"',
        }
        dashboard = load_dashboard()
        empty = []
        for panel, expr in targets(dashboard, "prometheus"):
            query = expr
            for variable, value in fill.items():
                query = query.replace(variable, value)
            assert "$" not in query, query
            if not _prom_query(prom_port, query):
                empty.append(f"{panel['title']}: {query}")
        assert empty == []

        variables = {v["name"]: v["query"] for v in dashboard["templating"]["list"]}
        values = {}
        for name in ("service", "saver"):
            match = re.fullmatch(r"label_values\((.*),\s*(\w+)\)", variables[name])
            assert match
            selector, label = match.groups()
            selector = selector.replace('"$service"', f'"{service}"')
            result = _prom_query(prom_port, f"count by ({label}) ({selector})")
            values[name] = {series["metric"][label] for series in result}
        savers = {"InMemorySaver", "_FailingLoads", "LoadTogether"}
        assert values == {"service": {service}, "saver": savers}
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        httpd.shutdown()
        httpd.server_close()
        meter_provider.shutdown()


# --------------------------------------------------------------------------------------------
# Structure
# --------------------------------------------------------------------------------------------


def test_panel_ids_are_unique_and_panels_do_not_overlap() -> None:
    panels = list(all_panels(load_dashboard()))
    ids = [panel["id"] for panel in panels]
    assert len(ids) == len(set(ids)), ids
    cells: dict[tuple[int, int], str] = {}
    for panel in panels:
        pos = panel["gridPos"]
        assert pos["x"] >= 0 and pos["w"] > 0 and pos["x"] + pos["w"] <= 24, panel["title"]
        for x in range(pos["x"], pos["x"] + pos["w"]):
            for y in range(pos["y"], pos["y"] + pos["h"]):
                assert (x, y) not in cells, f"{panel['title']} overlaps {cells[(x, y)]}"
                cells[(x, y)] = panel["title"]


def test_variables_used_are_defined_and_defined_ones_are_used() -> None:
    dashboard = load_dashboard()
    variables = dashboard["templating"]["list"]
    defined = [variable["name"] for variable in variables]
    assert defined == ["datasource", "tempo", "service", "saver"]
    used = variables_in(dashboard["panels"]) | variables_in(variables)
    assert used - set(defined) == set()
    for name in defined:
        others = [v for v in variables if v["name"] != name]
        assert name in variables_in(dashboard["panels"]) | variables_in(others), name
    kinds = {v["name"]: v["query"] for v in variables if v["type"] == "datasource"}
    assert kinds == {"datasource": "prometheus", "tempo": "tempo"}


def test_queries_go_to_the_data_source_variable_of_their_kind() -> None:
    expected = {"prometheus": "${datasource}", "tempo": "${tempo}"}
    for panel in all_panels(load_dashboard()):
        if panel["type"] == "row":
            continue
        ds = panel["datasource"]
        assert ds["uid"] == expected[ds["type"]], panel["title"]
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            assert target["datasource"] == ds, panel["title"]
            if ds["type"] == "tempo":
                assert target["queryType"] == "traceql"


# --------------------------------------------------------------------------------------------
# Type check with tsc against @grafana/schema
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def node_tools() -> Path:
    """node, npm and the pinned npm packages (scripts/tools/grafana-schema.sh installs them)."""
    missing = [tool for tool in ("node", "npm") if shutil.which(tool) is None]
    if missing:
        _skip_or_fail(f"{' and '.join(missing)} not found (needed for the Grafana type check)")
    run = subprocess.run(["bash", str(INSTALL_SCRIPT)], capture_output=True, text=True, timeout=600)
    if run.returncode != 0 or not TSC.exists():
        _skip_or_fail(f"{INSTALL_SCRIPT.name} failed:\n{run.stdout}\n{run.stderr}")
    return TSC


def generate(source: Path, output: Path) -> None:
    subprocess.run(
        ["node", str(CHECK / "generate.mjs"), str(source), str(output)],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    )


def tsc(tsc_bin: Path, project: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(tsc_bin), "--noEmit", "--pretty", "false", "-p", str(project)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )


def test_dashboard_satisfies_grafana_schema(node_tools: Path) -> None:
    generate(DASHBOARD_FILE, CHECK / "langgraph-checkpoints.gen.ts")
    run = tsc(node_tools, CHECK.relative_to(ROOT))
    assert run.returncode == 0, run.stdout + run.stderr


def test_schema_version_is_the_one_grafana_schema_writes(node_tools: Path) -> None:
    run = subprocess.run(
        [
            "node",
            "--input-type=module",
            "-e",
            "const m = await import('@grafana/schema');"
            " console.log(m.defaultDashboard.schemaVersion)",
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=CHECK,
        timeout=60,
    )
    assert load_dashboard()["schemaVersion"] == int(run.stdout.strip())


def _break_panels(d: dict[str, Any]) -> None:
    d["panels"] = "x"


def _break_grid_pos(d: dict[str, Any]) -> None:
    d["panels"][1]["gridPos"]["x"] = "0"


def _break_variable_type(d: dict[str, Any]) -> None:
    d["templating"]["list"][2]["type"] = "querry"


def _misspell_grid_pos(d: dict[str, Any]) -> None:
    d["panels"][1]["gridpos"] = d["panels"][1].pop("gridPos")


def _unchanged(d: dict[str, Any]) -> None:
    pass


@pytest.mark.parametrize(
    ("breakage", "expected"),
    [
        (_unchanged, None),
        (_break_panels, "Type 'string' is not assignable to type '(Panel"),
        (_break_grid_pos, "Type 'string' is not assignable to type 'number'"),
        (_break_variable_type, "'\"querry\"' is not assignable to type 'VariableType"),
        (_misspell_grid_pos, "'\"gridpos\"' does not exist in type 'Panel"),
    ],
    ids=["control", "panels-string", "gridPos-x-string", "variable-type", "gridPos-misspelled"],
)
def test_a_broken_dashboard_fails_the_type_check(
    node_tools: Path, tmp_path: Path, breakage: Any, expected: str | None
) -> None:
    """The same check project, on a copy of the dashboard with one field broken, must fail tsc.

    The control (an unchanged copy) must pass, so a failure is the broken field's, not the copy's.
    """
    for name in ("package.json", "tsconfig.json", "dashboard.check.ts"):
        shutil.copy(CHECK / name, tmp_path / name)
    (tmp_path / "node_modules").symlink_to(CHECK / "node_modules", target_is_directory=True)
    dashboard = copy.deepcopy(load_dashboard())
    breakage(dashboard)
    source = tmp_path / "dashboard.json"
    source.write_text(json.dumps(dashboard))
    generate(source, tmp_path / "langgraph-checkpoints.gen.ts")

    run = tsc(node_tools, tmp_path)
    output = run.stdout + run.stderr
    if expected is None:
        assert run.returncode == 0, output
        return
    assert run.returncode != 0, "tsc accepted a broken dashboard: the type check is not real"
    assert "langgraph-checkpoints.gen.ts" in output, output
    assert expected in output, output
