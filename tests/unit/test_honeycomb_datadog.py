"""Offline checks of dashboards/honeycomb and dashboards/datadog against the published API formats.

Each validator returns a list of problems (empty = valid) so that the negative tests can show it
rejects realistic mistakes. Sources for every rule are cited next to it:

Honeycomb
  HC-QS   https://docs.honeycomb.io/api/query-specification/ (fields of a query spec); the enums are
          the lists in honeycombio/terraform-provider-honeycombio client/query_spec.go, which cites
          that page.
  HC-Q    https://docs.honeycomb.io/api/tag/Queries/ (breakdowns, calculations, filters,
          filter_combination AND|OR, granularity between T/1000 and T/10, limit 1..10000, orders).
  HC-QA   https://docs.honeycomb.io/api/tag/Query-Annotations/ (name 1..80 chars, description
          <= 280 chars, query_id required).
  HC-B    https://docs.honeycomb.io/api/boards/create-a-board (type "flexible", panels of type
          query/slo/text, query_panel.query_id + query_annotation_id, position x/y/width/height);
          https://docs.honeycomb.io/troubleshoot/product-lifecycle/recommended-migrations/migrate-to-flexible-boards
          (classic boards, or no type, fail since 2025-08-15); width <= 12 and query_style
          graph|table|combo from the terraform provider's flexible_board docs.
  HC-T    https://docs.honeycomb.io/api/tag/Triggers/ (name 1..120 chars, description <= 1023,
          threshold {op: > >= < <=, value}, alert_type on_change|on_true); terraform provider
          client/trigger.go and docs/resources/trigger.md (exactly one calculation, no HEATMAP,
          no orders/limit; frequency divisible by 60 within 60..86400; time_range <= 4 * frequency
          and <= 1 day). docs.honeycomb.io/notify/triggers/create: no CONCURRENCY or RATE_* either.
  HC-OTLP honeycombio/husky otlp/traces.go (Honeycomb's OTLP translation): span columns name,
          duration_ms, status_code, error, trace.*, span.kind; span events become events with
          name = event name, parent_name, meta.annotation_type = span_event; links get
          meta.annotation_type = link; resource attributes (service.name) are copied.
Datadog
  DD-D    https://docs.datadoghq.com/api/latest/dashboards/ and the generated models of
          DataDog/datadog-api-client-python (v1/model: Dashboard requires title, layout_type,
          widgets; DashboardLayoutType ordered|free; widget definition types; formula-and-function
          query definitions; ListStreamQuery; FormulaAndFunctionEventAggregation).
  DD-M    https://docs.datadoghq.com/api/latest/monitors/ (Monitor requires type and query;
          MonitorType enum; metric alert query `time_aggr(time_window):space_aggr:metric{tags}
          [by {key}] operator #`, time_aggr avg|sum|max|min|change|pct_change, space_aggr
          avg|sum|min|max, change_aggr(time_aggr(window), timeshift) form).
  DD-OTLP https://docs.datadoghq.com/metrics/open_telemetry/otlp_metric_types/ (histogram ->
          distribution by default; cumulative monotonic sum -> count, names unchanged);
          https://docs.datadoghq.com/metrics/distributions/ (pXX and count/min/max/sum/avg on
          distributions); https://docs.datadoghq.com/opentelemetry/correlate/ (service.name ->
          service, deployment.environment[.name] -> env).
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest

from helpers import EVENT_ONLY_ATTRIBUTES
from langgraph.checkpoint.otel import names
from suite_paths import REPO as ROOT

HC = ROOT / "dashboards" / "honeycomb"
DD = ROOT / "dashboards" / "datadog"

# --- what the library emits (names.py is the one place names are defined) --------------------
NOT_TELEMETRY = {"SCOPE", "METADATA_KEY", "META_FORMAT", "META_STATE_HASH", "META_CHANNELS"}
NOT_TELEMETRY |= {"META_NODES", "META_RESUME", "META_SCHEMA", "META_LINEAGE", "UNVERSIONED"}
SPAN_NAMES = set(names.spans().values())
EVENT_NAMES = set(names.events().values())
METRIC_NAMES = set(names.metrics().values())
ATTRIBUTES = {
    value
    for key, value in vars(names).items()
    if key.isupper()
    and isinstance(value, str)
    and key not in NOT_TELEMETRY
    and not key.startswith(("SPAN_", "EVENT_", "METRIC_"))
}
# Attribute sets of each metric instrument (telemetry contract, "Metrics" table).
METRIC_ATTRIBUTES = {
    names.METRIC_OPERATION_DURATION: {names.OPERATION, names.SAVER, names.ERROR_TYPE},
    names.METRIC_CHECKPOINT_SIZE: {names.SAVER},
    names.METRIC_CHANNEL_SIZE: {names.CHANNEL_NAME},
    names.METRIC_RESUMES: {names.RESUME_KIND},
    names.METRIC_DIVERGENCES: {names.DIVERGENCE_KIND},
    names.METRIC_TASK_OUTCOMES: {names.TASK_NODE, names.TASK_OUTCOME},
    names.METRIC_SCHEMA_MISMATCHES: {names.SCHEMA_WRITTEN_VERSION, names.SCHEMA_RUNNING_VERSION},
    names.METRIC_GRAPH_CHANGES: {names.GRAPH_NAME},
    names.METRIC_CONCURRENT_WRITES: {names.GRAPH_NAME},
    names.METRIC_THREAD_CHECKPOINTS: {names.SAVER},
    names.METRIC_THREAD_WRITTEN: {names.SAVER},
    names.METRIC_MESSAGES: {names.SAVER},
    names.METRIC_MESSAGE_TOKENS: {names.SAVER},
    names.METRIC_WINDOW_SHARE: {names.SAVER},
    names.METRIC_RUN_DURATION: {names.GEN_AI_OPERATION_NAME, names.AGENT_NAME, names.ERROR_TYPE},
    names.METRIC_RETENTION_CHECKPOINTS_REMOVED: {names.RETENTION_BY, names.SAVER},
    names.METRIC_RETENTION_BYTES_RECLAIMED: {names.RETENTION_BY, names.SAVER},
}
HISTOGRAM_METRICS = {
    names.METRIC_RUN_DURATION,
    names.METRIC_OPERATION_DURATION,
    names.METRIC_CHECKPOINT_SIZE,
    names.METRIC_CHANNEL_SIZE,
    names.METRIC_THREAD_CHECKPOINTS,
    names.METRIC_THREAD_WRITTEN,
    names.METRIC_MESSAGES,
    names.METRIC_MESSAGE_TOKENS,
    names.METRIC_WINDOW_SHARE,
}
# Attributes only span events carry (Honeycomb stores each span event as its own event, with
# meta.annotation_type = span_event): a query on them without that filter finds nothing.
# Values of the closed-set attributes (telemetry contract).
ENUM_VALUES: dict[str, set[Any]] = {
    names.RESUME_KIND: {"crash", "error", "interrupt", "fork", "update", "continue"},
    names.TASK_OUTCOME: {"ok", "error", "interrupt", "resume"},
    names.DIVERGENCE_KIND: {"state", "trajectory", "duplicate_tool_call"},
    names.OPERATION: {"put", "put_writes", "get", "resume", "list", "delete_thread"}
    | {"delete_for_runs", "copy_thread", "prune", "get_delta_channel_history"},
    names.DIVERGENCE_DETECTED: {True},
    names.TOOL_RETRY: {True, False},
}

# Backend-native columns/tags (HC-OTLP, DD-OTLP).
HONEYCOMB_NATIVE = {
    "name",
    "duration_ms",
    "status_code",
    "error",
    "trace.trace_id",
    "trace.span_id",
    "trace.parent_id",
    "trace.link.trace_id",
    "trace.link.span_id",
    "span.kind",
    "parent_name",
    "meta.annotation_type",
    "meta.signal_type",
    "service.name",
}
HONEYCOMB_ANNOTATION_TYPES = {"span_event", "link"}
DATADOG_RESERVED_TAGS = {"service", "env", "version", "host"}
DATADOG_SPAN_RESERVED = {"resource_name", "service", "env", "timestamp", "operation_name"}

# --- Honeycomb enums (HC-QS) -----------------------------------------------------------------
CALC_OPS = {"COUNT", "CONCURRENCY", "SUM", "AVG", "COUNT_DISTINCT", "MAX", "MIN", "HEATMAP"}
CALC_OPS |= {"RATE_AVG", "RATE_SUM", "RATE_MAX"}
CALC_OPS |= {f"P{p}" for p in ("001", "01", "05", "10", "25", "50", "75", "90", "95", "99", "999")}
UNARY_OPS = {"COUNT", "CONCURRENCY"}
FILTER_OPS = {"=", "!=", ">", ">=", "<", "<=", "starts-with", "does-not-start-with", "exists"}
FILTER_OPS |= {"does-not-exist", "contains", "does-not-contain", "in", "not-in"}
QUERY_FIELDS = {"calculations", "filters", "filter_combination", "breakdowns", "orders"}
QUERY_FIELDS |= {"havings", "limit", "time_range", "start_time", "end_time", "granularity"}
TRIGGER_QUERY_FIELDS = {"calculations", "filters", "filter_combination", "breakdowns", "time_range"}
TRIGGER_FIELDS = {"name", "description", "disabled", "query", "query_id", "alert_type"}
TRIGGER_FIELDS |= {"threshold", "frequency", "recipients", "evaluation_schedule"}
THRESHOLD_OPS = {">", ">=", "<", "<="}
PANEL_TYPES = {"query", "slo", "text"}
QUERY_STYLES = {"graph", "table", "combo"}
PLACEHOLDER = re.compile(r"^@(query|annotation):([a-z0-9_]+)$")

# --- Datadog enums (DD-D, DD-M) -----------------------------------------------------------------
WIDGET_TYPES = {"note", "timeseries", "query_value", "toplist", "heatmap", "distribution"}
WIDGET_TYPES |= {"list_stream", "group", "table"}
EVENT_DATA_SOURCES = {"logs", "spans", "network", "rum", "security_signals", "profiles", "audit"}
EVENT_DATA_SOURCES |= {"events", "ci_tests", "ci_pipelines"}
EVENT_AGGREGATIONS = {"count", "cardinality", "median", "pc75", "pc90", "pc95", "pc98", "pc99"}
EVENT_AGGREGATIONS |= {"sum", "min", "max", "avg"}
RESPONSE_FORMATS = {"timeseries", "scalar", "event_list"}
DISPLAY_TYPES = {"area", "bars", "line", "overlay"}
MONITOR_TYPES = {"composite", "event alert", "log alert", "metric alert", "process alert"}
MONITOR_TYPES |= {"query alert", "rum alert", "service check", "synthetics alert"}
MONITOR_TYPES |= {"trace-analytics alert", "slo alert", "event-v2 alert", "audit alert"}
LIST_STREAM_WIDTHS = {"auto", "compact", "full"}

METRIC_TERM = re.compile(
    r"(?:(?P<agg>avg|sum|min|max|count|p\d{1,2}(?:\.\d{1,2})?):)?"
    r"(?P<metric>[a-z][a-z0-9_.]*)\{(?P<tags>[^}]*)\}"
    r"(?: by \{(?P<by>[^}]*)\})?(?P<mods>(?:\.as_count\(\)|\.as_rate\(\))?)"
)
MONITOR_METRIC = re.compile(
    r"^(?:(?P<time>avg|sum|max|min|percentile)\((?P<window>last_\d+[mhdw])\)"
    r"|(?P<change>change|pct_change)\((?:avg|sum|max|min)\(last_\d+[mhd]\),"
    r"(?:\d+m_ago|\d+h_ago|1d_ago)\)):(?P<expr>.+?)\s*(?P<op><=|>=|==|!=|<|>)\s*(?P<value>-?\d+(?:\.\d+)?)$"
)
TRACE_ANALYTICS = re.compile(
    r'^trace-analytics\("(?P<search>[^"]*)"\)\.rollup\("(?P<rollup>count|avg|cardinality)"'
    r'(?:,\s*"[^"]+")?\)(?:\.by\("(?P<by>[^"]+)"\))?\.last\("\d+[mh]"\)'
    r"\s*(?P<op><=|>=|==|!=|<|>)\s*(?P<value>-?\d+(?:\.\d+)?)$"
)


def load(path: Path) -> Any:
    return json.loads(path.read_text())


def queries() -> dict[str, dict[str, Any]]:
    return {p.stem: load(p) for p in sorted((HC / "queries").glob("*.json"))}


def triggers() -> dict[str, dict[str, Any]]:
    return {p.stem: load(p) for p in sorted((HC / "triggers").glob("*.json"))}


# --- Honeycomb validators -------------------------------------------------------------------------
def check_column(column: Any, where: str) -> list[str]:
    if not isinstance(column, str):
        return [f"{where}: column must be a string"]
    if column in ATTRIBUTES or column in HONEYCOMB_NATIVE:
        return []
    return [f"{where}: column {column!r} is neither an emitted attribute nor a Honeycomb field"]


def validate_query_spec(spec: Any, where: str, *, trigger: bool = False) -> list[str]:
    if not isinstance(spec, dict):
        return [f"{where}: query spec must be an object"]
    errors = []
    allowed = TRIGGER_QUERY_FIELDS if trigger else QUERY_FIELDS
    errors += [f"{where}: field {k!r} not allowed here" for k in set(spec) - allowed]
    calcs = spec.get("calculations", [{"op": "COUNT"}])
    if not isinstance(calcs, list) or not calcs:
        errors.append(f"{where}: calculations must be a non-empty list")
        calcs = []
    for i, calc in enumerate(calcs):
        op = calc.get("op")
        if op not in CALC_OPS:
            errors.append(f"{where}: calculation {i} op {op!r} unknown")
        if op in UNARY_OPS:
            if "column" in calc:
                errors.append(f"{where}: {op} takes no column")
        else:
            errors += check_column(calc.get("column"), f"{where}: calculation {i}")
    for i, flt in enumerate(spec.get("filters", [])):
        op = flt.get("op")
        if op not in FILTER_OPS:
            errors.append(f"{where}: filter {i} op {op!r} unknown")
        column = flt.get("column")
        errors += check_column(column, f"{where}: filter {i}")
        if op in {"exists", "does-not-exist"}:
            if "value" in flt:
                errors.append(f"{where}: filter {i} {op} takes no value")
            continue
        if "value" not in flt:
            errors.append(f"{where}: filter {i} needs a value")
        value = flt.get("value")
        if column == "name" and op == "=" and value not in SPAN_NAMES | EVENT_NAMES:
            errors.append(f"{where}: name = {value!r} is no span or event the library emits")
        if column == "meta.annotation_type" and value not in HONEYCOMB_ANNOTATION_TYPES:
            errors.append(f"{where}: meta.annotation_type = {value!r} unknown")
        if column in ENUM_VALUES and op == "=" and value not in ENUM_VALUES[column]:
            errors.append(f"{where}: {column} = {value!r} is not a value the library emits")
    if spec.get("filter_combination", "AND") not in {"AND", "OR"}:
        errors.append(f"{where}: filter_combination must be AND or OR")
    breakdowns = spec.get("breakdowns", [])
    columns = {c.get("column") for c in calcs} | {f.get("column") for f in spec.get("filters", [])}
    on_events = {"column": "meta.annotation_type", "op": "=", "value": "span_event"}
    for column in sorted((columns | set(breakdowns)) & EVENT_ONLY_ATTRIBUTES):
        if on_events not in spec.get("filters", []):
            errors.append(
                f"{where}: {column} is on span events only: filter meta.annotation_type = span_event"
            )
    for column in breakdowns:
        errors += check_column(column, f"{where}: breakdown")
    calc_keys = {(c.get("op"), c.get("column")) for c in calcs}
    for i, order in enumerate(spec.get("orders", [])):
        if order.get("order", "ascending") not in {"ascending", "descending"}:
            errors.append(f"{where}: order {i} direction unknown")
        key = (order.get("op"), order.get("column"))
        if key not in calc_keys and not (order.get("op") is None and key[1] in breakdowns):
            errors.append(f"{where}: order {i} is in neither calculations nor breakdowns")
    if "limit" in spec and not (isinstance(spec["limit"], int) and 1 <= spec["limit"] <= 10000):
        errors.append(f"{where}: limit must be an int in 1..10000")
    time_range = spec.get("time_range", 7200)
    if not isinstance(time_range, int) or time_range <= 0:
        errors.append(f"{where}: time_range must be a positive int (seconds)")
    elif "granularity" in spec and not time_range / 1000 <= spec["granularity"] <= time_range / 10:
        errors.append(f"{where}: granularity must lie between time_range/1000 and time_range/10")
    if trigger:
        if len(calcs) != 1:
            errors.append(f"{where}: a trigger query needs exactly one calculation")
        if any(
            c.get("op") in {"HEATMAP", "CONCURRENCY"} or c.get("op", "").startswith("RATE_")
            for c in calcs
        ):
            errors.append(f"{where}: HEATMAP, CONCURRENCY and RATE_* cannot be used in a trigger")
        if isinstance(time_range, int) and time_range > 86400:
            errors.append(f"{where}: a trigger query's time_range is at most one day")
    return errors


def validate_trigger(trig: Any, where: str) -> list[str]:
    if not isinstance(trig, dict):
        return [f"{where}: trigger must be an object"]
    errors = [f"{where}: field {k!r} unknown" for k in set(trig) - TRIGGER_FIELDS]
    name = trig.get("name")
    if not isinstance(name, str) or not 1 <= len(name) <= 120:
        errors.append(f"{where}: name must be 1..120 characters")
    if len(trig.get("description", "")) > 1023:
        errors.append(f"{where}: description longer than 1023 characters")
    if ("query" in trig) == ("query_id" in trig):
        errors.append(f"{where}: give exactly one of query and query_id")
    threshold = trig.get("threshold")
    if not isinstance(threshold, dict) or threshold.get("op") not in THRESHOLD_OPS:
        errors.append(f"{where}: threshold needs op in {sorted(THRESHOLD_OPS)}")
    elif not isinstance(threshold.get("value"), int | float) or isinstance(
        threshold["value"], bool
    ):
        errors.append(f"{where}: threshold value must be a number")
    frequency = trig.get("frequency", 900)
    if not isinstance(frequency, int) or frequency % 60 or not 60 <= frequency <= 86400:
        errors.append(f"{where}: frequency must be a multiple of 60 in 60..86400")
        frequency = 86400
    if trig.get("alert_type", "on_change") not in {"on_change", "on_true"}:
        errors.append(f"{where}: alert_type must be on_change or on_true")
    if "query" in trig:
        errors += validate_query_spec(trig["query"], f"{where}: query", trigger=True)
        if trig["query"].get("time_range", 7200) > 4 * frequency:
            errors.append(f"{where}: query time_range exceeds 4 x frequency")
    return errors


def validate_board(board: Any, query_keys: set[str], annotation_keys: set[str]) -> list[str]:
    if not isinstance(board, dict):
        return ["board must be an object"]
    errors = []
    if not isinstance(board.get("name"), str) or not board["name"]:
        errors.append("board: name is required")
    if board.get("type") != "flexible":
        errors.append("board: type must be 'flexible' (classic boards are no longer accepted)")
    if "queries" in board or "slos" in board:
        errors.append("board: 'queries'/'slos' are the legacy format; use 'panels'")
    for i, panel in enumerate(board.get("panels", [])):
        kind = panel.get("type")
        if kind not in PANEL_TYPES:
            errors.append(f"panel {i}: type {kind!r} unknown")
        pos = panel.get("position", {})
        for key in ("x_coordinate", "y_coordinate", "width", "height"):
            if not isinstance(pos.get(key), int) or pos[key] < 0:
                errors.append(f"panel {i}: position.{key} must be a non-negative int")
        if pos.get("width", 0) > 12 or pos.get("x_coordinate", 0) + pos.get("width", 0) > 12:
            errors.append(f"panel {i}: wider than the 12-column grid")
        if kind == "query":
            qp = panel.get("query_panel", {})
            if qp.get("query_style", "graph") not in QUERY_STYLES:
                errors.append(f"panel {i}: query_style unknown")
            for field, kind_, keys in (
                ("query_id", "query", query_keys),
                ("query_annotation_id", "annotation", annotation_keys),
            ):
                match = PLACEHOLDER.match(str(qp.get(field, "")))
                if not match or match.group(1) != kind_ or match.group(2) not in keys:
                    errors.append(f"panel {i}: {field} must be @{kind_}:<key of an existing file>")
        if kind == "text" and not panel.get("text_panel", {}).get("content"):
            errors.append(f"panel {i}: text panel needs content")
    return errors


# --- Datadog validators ---------------------------------------------------------------------------
def check_metric_expr(expr: str, where: str, template_prefixes: dict[str, str]) -> list[str]:
    errors = []
    terms = list(METRIC_TERM.finditer(expr))
    if not terms:
        return [f"{where}: no metric query in {expr!r}"]
    for term in terms:
        metric = term["metric"]
        if metric not in METRIC_NAMES:
            errors.append(f"{where}: metric {metric!r} is not emitted by the library")
            continue
        allowed = METRIC_ATTRIBUTES[metric] | DATADOG_RESERVED_TAGS
        is_distribution = metric in HISTOGRAM_METRICS
        agg = term["agg"] or "avg"
        if (agg == "count" or agg.startswith("p")) and not is_distribution:
            errors.append(f"{where}: {agg}: needs a distribution; {metric} is a count")
        if not is_distribution and term["mods"] != ".as_count()":
            errors.append(f"{where}: counter {metric} should be read with .as_count()")
        for tag in filter(None, (t.strip() for t in term["tags"].split(","))):
            if tag == "*":
                continue
            if tag.startswith("$"):
                prefix = template_prefixes.get(tag[1:])
                if prefix is None:
                    errors.append(f"{where}: template variable {tag} undefined")
                elif prefix not in allowed:
                    errors.append(f"{where}: {tag} filters on {prefix!r}, which {metric} lacks")
                continue
            key, _, value = tag.removeprefix("!").partition(":")  # `!tag:value` excludes
            if key not in allowed:
                errors.append(f"{where}: tag {key!r} is not an attribute of {metric}")
            elif key in ENUM_VALUES and value not in ENUM_VALUES[key]:
                errors.append(f"{where}: {key}:{value} is not a value the library emits")
        for key in filter(None, (t.strip() for t in (term["by"] or "").split(","))):
            if key not in allowed:
                errors.append(f"{where}: group-by {key!r} is not an attribute of {metric}")
    return errors


def check_span_search(query: str, where: str) -> list[str]:
    errors = []
    for token in query.split():
        key, _, value = token.lstrip("-").partition(":")
        if key.startswith("@"):
            if key[1:] not in ATTRIBUTES and key != "@duration":
                errors.append(f"{where}: facet {key} is not an emitted attribute")
            elif key[1:] in ENUM_VALUES and value != "*":
                parsed: Any = {"true": True, "false": False}.get(value, value)
                if parsed not in ENUM_VALUES[key[1:]]:
                    errors.append(f"{where}: {key}:{value} is not a value the library emits")
        elif key == "resource_name" and value not in SPAN_NAMES:
            errors.append(f"{where}: resource_name:{value} is not a span the library emits")
        elif key not in DATADOG_SPAN_RESERVED:
            errors.append(f"{where}: search term {token!r} not understood")
    return errors


def check_field(field: str, where: str) -> list[str]:
    if field.startswith("@"):
        ok = field[1:] in ATTRIBUTES or field == "@duration"
        return [] if ok else [f"{where}: {field} is not an emitted attribute"]
    return [] if field in DATADOG_SPAN_RESERVED else [f"{where}: field {field!r} unknown"]


def validate_dashboard(dash: Any) -> list[str]:
    if not isinstance(dash, dict):
        return ["dashboard must be an object"]
    errors = [
        f"dashboard: {k} is required" for k in ("title", "layout_type", "widgets") if k not in dash
    ]
    if dash.get("layout_type") not in {"ordered", "free"}:
        errors.append("dashboard: layout_type must be ordered or free")
    prefixes = {}
    for tv in dash.get("template_variables", []):
        if not isinstance(tv.get("name"), str):
            errors.append("template variable: name is required")
            continue
        prefixes[tv["name"]] = tv.get("prefix")
        if tv.get("prefix") not in ATTRIBUTES | DATADOG_RESERVED_TAGS:
            errors.append(f"template variable {tv['name']}: prefix {tv.get('prefix')!r} unknown")
    for i, widget in enumerate(dash.get("widgets", [])):
        definition = widget.get("definition", {})
        kind = definition.get("type")
        where = f"widget {i} ({definition.get('title', kind)})"
        if kind not in WIDGET_TYPES:
            errors.append(f"{where}: type {kind!r} unknown")
            continue
        if kind == "note":
            if not definition.get("content"):
                errors.append(f"{where}: note needs content")
            continue
        requests = definition.get("requests")
        if not isinstance(requests, list) or not requests:
            errors.append(f"{where}: requests is required")
            continue
        for request in requests:
            if request.get("response_format") not in RESPONSE_FORMATS:
                errors.append(f"{where}: response_format unknown")
            if kind == "list_stream":
                query = request.get("query", {})
                if query.get("data_source") != "trace_stream" or "query_string" not in query:
                    errors.append(f"{where}: list_stream needs query.data_source and query_string")
                errors += check_span_search(query.get("query_string", ""), where)
                if not request.get("columns"):
                    errors.append(f"{where}: list_stream needs columns")
                for col in request.get("columns", []):
                    if col.get("width") not in LIST_STREAM_WIDTHS:
                        errors.append(f"{where}: column width unknown")
                    errors += check_field(col.get("field", ""), where)
                continue
            if "display_type" in request and request["display_type"] not in DISPLAY_TYPES:
                errors.append(f"{where}: display_type unknown")
            names_ = set()
            for query in request.get("queries", []):
                names_.add(query.get("name"))
                source = query.get("data_source")
                if source == "metrics":
                    if not {"name", "query"} <= set(query):
                        errors.append(f"{where}: metric query needs name and query")
                    errors += check_metric_expr(query.get("query", ""), where, prefixes)
                elif source in EVENT_DATA_SOURCES:
                    compute = query.get("compute", {})
                    if compute.get("aggregation") not in EVENT_AGGREGATIONS:
                        errors.append(f"{where}: compute.aggregation unknown")
                    if source == "spans":
                        errors += check_span_search(query.get("search", {}).get("query", ""), where)
                        for field in [compute.get("metric")] + [
                            g.get("facet") for g in query.get("group_by", [])
                        ]:
                            if field is not None:
                                errors += check_field(field, where)
                else:
                    errors.append(f"{where}: data_source {source!r} unknown")
            for formula in request.get("formulas", []):
                refs = set(re.findall(r"\b(q\d+)\b", formula.get("formula", "")))
                if not refs or not refs <= names_:
                    errors.append(f"{where}: formula {formula.get('formula')!r} names no query")
    return errors


def validate_monitor(mon: Any, where: str) -> list[str]:
    if not isinstance(mon, dict):
        return [f"{where}: monitor must be an object"]
    errors = [f"{where}: {k} is required" for k in ("type", "query") if k not in mon]
    kind, query = mon.get("type"), mon.get("query", "")
    if kind not in MONITOR_TYPES:
        return [*errors, f"{where}: type {kind!r} unknown"]
    critical = mon.get("options", {}).get("thresholds", {}).get("critical")
    if kind in {"query alert", "metric alert"}:
        match = MONITOR_METRIC.match(query)
        if not match:
            return [*errors, f"{where}: query does not follow time_aggr(window):metric op #"]
        errors += check_metric_expr(match["expr"], where, {})
    elif kind == "trace-analytics alert":
        match = TRACE_ANALYTICS.match(query)
        if not match:
            return [
                *errors,
                f"{where}: query does not follow trace-analytics(...).rollup().last() op #",
            ]
        errors += check_span_search(match["search"], where)
        if match["by"] and match["by"] not in DATADOG_SPAN_RESERVED:
            errors += check_field(match["by"], where)
    else:
        return [*errors, f"{where}: only metric and trace-analytics monitors are expected here"]
    if critical is None or float(match["value"]) != float(critical):
        errors.append(f"{where}: options.thresholds.critical must equal the query's threshold")
    warning = mon["options"]["thresholds"].get("warning")
    if warning is not None and match["op"] in {">", ">="} and warning > critical:
        errors.append(f"{where}: warning threshold above critical")
    return errors


# --- tests: the shipped files -------------------------------------------------------------------
def test_every_honeycomb_query_is_valid() -> None:
    found = queries()
    assert {"resume_rate", "divergences", "slowest_writes", "largest_states"} <= set(found)
    assert "write_latency_heatmap" in found
    for key, spec in found.items():
        assert validate_query_spec(spec, key) == []
    heatmap = found["write_latency_heatmap"]["calculations"]
    assert {"op": "HEATMAP", "column": "duration_ms"} in heatmap


def test_every_query_has_an_annotation_and_the_board_uses_them_all() -> None:
    annotations = load(HC / "annotations.json")
    assert set(annotations) == set(queries())
    for key, ann in annotations.items():
        assert 1 <= len(ann["name"]) <= 80, key
        assert len(ann.get("description", "")) <= 280, key
    board = load(HC / "board.json")
    assert validate_board(board, set(queries()), set(annotations)) == []
    used = {p["query_panel"]["query_id"] for p in board["panels"] if p["type"] == "query"}
    assert used == {f"@query:{k}" for k in queries()}


def test_honeycomb_triggers_cover_the_conditions() -> None:
    found = triggers()
    assert set(found) == {
        "divergence_detected",
        "resume_storm",
        "write_latency_p95",
        "checkpoint_size",
        "task_errors",
        "schema_mismatch",
        "graph_changed",
        "concurrent_writes",
        "thread_growth",
        "context_window",
        "retention_failed",
    }
    for key, trig in found.items():
        assert validate_trigger(trig, key) == []


SPAN_EVENTS = {"column": "meta.annotation_type", "op": "=", "value": "span_event"}


def name_filter(value: str) -> dict[str, Any]:
    return {"column": "name", "op": "=", "value": value}


def test_honeycomb_schema_growth_and_tool_queries() -> None:
    found = queries()
    schema = found["schema_mismatches"]
    assert SPAN_EVENTS in schema["filters"]
    assert name_filter(names.EVENT_SCHEMA_MISMATCH) in schema["filters"]
    assert schema["breakdowns"] == [names.SCHEMA_WRITTEN_VERSION, names.SCHEMA_RUNNING_VERSION]

    growth = found["thread_growth"]
    assert name_filter(names.SPAN_PUT) in growth["filters"]
    assert {c["column"] for c in growth["calculations"]} == {
        names.THREAD_CHECKPOINTS,
        names.THREAD_WRITTEN_BYTES,
    }
    assert names.THREAD_ID in growth["breakdowns"]

    channels = found["largest_channels"]
    assert name_filter(names.SPAN_PUT) in channels["filters"]
    assert {"op": "MAX", "column": names.LARGEST_CHANNEL_SIZE_BYTES} in channels["calculations"]
    assert channels["breakdowns"] == [names.LARGEST_CHANNEL]

    tools = found["tool_duplicates"]
    assert name_filter(names.SPAN_TOOL_START) in tools["filters"]
    assert {"column": names.TOOL_RETRY, "op": "=", "value": True} in tools["filters"]
    assert tools["breakdowns"][0] == names.TOOL_IDEMPOTENCY_KEY
    assert tools["calculations"] == [{"op": "COUNT"}]

    found_triggers = triggers()
    mismatch = found_triggers["schema_mismatch"]
    assert mismatch["query"]["filters"] == schema["filters"]
    assert mismatch["threshold"] == {"op": ">", "value": 0}
    assert mismatch["query"]["time_range"] == 900  # as the Prometheus rule's 15m
    thread = found_triggers["thread_growth"]
    assert thread["query"]["calculations"] == [{"op": "MAX", "column": names.THREAD_CHECKPOINTS}]
    assert thread["threshold"] == {"op": ">", "value": 1000}  # as the Prometheus rule


def test_honeycomb_graph_change_and_concurrent_write_queries_and_triggers() -> None:
    found, found_triggers = queries(), triggers()
    expected = {
        # query key, trigger key: the span event, and its breakdowns
        ("graph_changes", "graph_changed"): (
            names.EVENT_GRAPH_CHANGED,
            [names.GRAPH_WRITTEN_STRUCTURE_HASH, names.GRAPH_STRUCTURE_HASH],
        ),
        ("concurrent_writes", "concurrent_writes"): (
            names.EVENT_CONCURRENT_WRITE,
            ["service.name"],
        ),
    }
    for (query_key, trigger_key), (event, breakdowns) in expected.items():
        query = found[query_key]
        assert query["filters"] == [SPAN_EVENTS, name_filter(event)], query_key
        assert query["calculations"] == [{"op": "COUNT"}], query_key
        assert query["breakdowns"] == breakdowns, query_key
        trig = found_triggers[trigger_key]
        assert trig["query"]["filters"] == query["filters"], trigger_key
        assert trig["query"]["breakdowns"] == breakdowns, trigger_key
        assert trig["threshold"] == {"op": ">", "value": 0}, trigger_key
        assert trig["query"]["time_range"] == 900, trigger_key  # as the Prometheus rules' 15m
        assert trig["frequency"] == 300, trigger_key


def test_datadog_dashboard_is_valid() -> None:
    dash = load(DD / "dashboard.json")
    assert validate_dashboard(dash) == []
    assert dash["layout_type"] == "ordered"
    sources = {
        q["data_source"]
        for w in dash["widgets"]
        for r in w["definition"].get("requests", [])
        for q in r.get("queries", [])
    }
    assert {"metrics", "spans"} <= sources
    text = json.dumps(dash)
    for metric in METRIC_NAMES:
        assert metric in text, f"dashboard does not chart {metric}"


def test_datadog_monitors_are_valid_and_cover_the_conditions() -> None:
    monitors = load(DD / "monitors.json")
    for i, mon in enumerate(monitors):
        assert validate_monitor(mon, f"monitor {i}") == []
    metric_queries = " ".join(m["query"] for m in monitors if m["type"] == "query alert")
    for metric in (
        names.METRIC_DIVERGENCES,
        names.METRIC_RESUMES,
        names.METRIC_OPERATION_DURATION,
        names.METRIC_CHANNEL_SIZE,
        names.METRIC_TASK_OUTCOMES,
        names.METRIC_SCHEMA_MISMATCHES,
        names.METRIC_GRAPH_CHANGES,
        names.METRIC_CONCURRENT_WRITES,
        names.METRIC_THREAD_CHECKPOINTS,
        names.METRIC_THREAD_WRITTEN,
        names.METRIC_WINDOW_SHARE,
    ):
        assert metric in metric_queries


def test_datadog_schema_and_growth_monitors() -> None:
    queries_ = {m["query"] for m in load(DD / "monitors.json")}
    schema = "sum:langgraph.checkpoint.schema.mismatches{*} by "
    schema += "{langgraph.schema.written_version,langgraph.schema.running_version}.as_count()"
    assert f"sum(last_15m):{schema} > 0" in queries_
    for metric in (names.METRIC_GRAPH_CHANGES, names.METRIC_CONCURRENT_WRITES):
        by_graph = f"sum:{metric}{{*}} by {{{names.GRAPH_NAME}}}.as_count()"
        assert f"sum(last_15m):{by_graph} > 0" in queries_  # as the Prometheus rules
    assert (
        "max(last_1h):max:langgraph.checkpoint.thread.checkpoints{*} by {langgraph.saver} > 1000"
        in queries_
    )
    assert (
        "max(last_1h):max:langgraph.checkpoint.thread.written{*} by {langgraph.saver} > 67108864"
        in queries_
    )
    assert (
        "pct_change(avg(last_30m),6h_ago):p95:langgraph.checkpoint.channel.size{*} "
        "by {langgraph.channel.name} > 100"
    ) in queries_


def test_datadog_dashboard_charts_schema_growth_and_tool_retries() -> None:
    dash = load(DD / "dashboard.json")
    by_title = {w["definition"].get("title"): w["definition"] for w in dash["widgets"]}

    def query_texts(title: str) -> list[str]:
        return [
            q.get("query") or q["search"]["query"]
            for r in by_title[title]["requests"]
            for q in r["queries"]
        ]

    mismatches = query_texts("Schema mismatches on resume (written -> running version)")
    assert mismatches == [
        "sum:langgraph.checkpoint.schema.mismatches{$service,$env} by "
        "{langgraph.schema.written_version,langgraph.schema.running_version}.as_count()"
    ]
    for title, metric in (
        ("Graph changes on resume (by graph)", names.METRIC_GRAPH_CHANGES),
        ("Concurrent writes to one thread (by graph)", names.METRIC_CONCURRENT_WRITES),
    ):
        assert query_texts(title) == [
            f"sum:{metric}{{$service,$env}} by {{{names.GRAPH_NAME}}}.as_count()"
        ], title
    # the sum of the channel-size distribution (one value per changed channel per write) is the
    # bytes written to each channel; a distribution, so no .as_count()
    channel = query_texts("Bytes written per channel (top 10)")
    assert channel == [
        "sum:langgraph.checkpoint.channel.size{$service,$env} by {langgraph.channel.name}"
    ]
    assert (
        by_title["Bytes written per channel (top 10)"]["requests"][0]["queries"][0]["aggregator"]
        == "sum"
    )
    checkpoints = query_texts("Checkpoints per thread at run end p50 / p95 / max by saver")
    assert [q.split(":")[0] for q in checkpoints] == ["p50", "p95", "max"]
    assert all(names.METRIC_THREAD_CHECKPOINTS + "{" in q and "$saver" in q for q in checkpoints)
    written = query_texts("Bytes written per thread at run end p95 / max by saver (bytes)")
    assert all(names.METRIC_THREAD_WRITTEN + "{" in q and "$saver" in q for q in written)
    tools = by_title["APM: tool calls started again (possible duplicates) by idempotency key"]
    (query,) = tools["requests"][0]["queries"]
    assert (
        query["search"]["query"] == "resource_name:langgraph.tool.start @langgraph.tool.retry:true"
    )
    assert query["group_by"][0]["facet"] == f"@{names.TOOL_IDEMPOTENCY_KEY}"
    largest = by_title["APM: largest channel of each checkpoint (max bytes)"]
    (query,) = largest["requests"][0]["queries"]
    assert query["compute"] == {
        "aggregation": "max",
        "metric": f"@{names.LARGEST_CHANNEL_SIZE_BYTES}",
    }
    assert query["group_by"][0]["facet"] == f"@{names.LARGEST_CHANNEL}"


# --- tests: the validators reject realistic mistakes --------------------------------------------
@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (
            lambda s: s["filters"][0].update(value="langgraph.checkpoint.resumed"),
            "no span or event",
        ),
        (lambda s: s["breakdowns"].__setitem__(0, "langgraph.resume_kind"), "neither an emitted"),
        (lambda s: s["calculations"].__setitem__(0, {"op": "PERCENTILE95"}), "op 'PERCENTILE95'"),
        (lambda s: s["filters"][0].update(op="=="), "op '=='"),
        (lambda s: s.update(granularity=5), "granularity"),
        (lambda s: s.update(columns=["name"]), "field 'columns'"),
    ],
)
def test_query_validator_rejects(mutate: Any, expected: str) -> None:
    spec = copy.deepcopy(queries()["resume_rate"])
    mutate(spec)
    errors = validate_query_spec(spec, "mutated")
    assert any(expected in e for e in errors), errors


def _by_other_trace_on_puts(spec: dict[str, Any]) -> None:
    """The concurrent-write query read off put spans, by the other run's trace (an event's)."""
    spec["filters"] = [name_filter(names.SPAN_PUT)]
    spec["breakdowns"] = [names.CONCURRENT_OTHER_TRACE_ID]


@pytest.mark.parametrize(
    ("key", "mutate", "expected"),
    [
        # the version pair is on the span event, not on the resume span
        (
            "schema_mismatches",
            lambda s: s["filters"].__setitem__(0, name_filter(names.SPAN_RESUME)),
            "on span events only",
        ),
        # what changed, and the other run, are on the span events too
        (
            "graph_changes",
            lambda s: s["filters"].__setitem__(0, name_filter(names.SPAN_RESUME)),
            "on span events only",
        ),
        ("concurrent_writes", _by_other_trace_on_puts, "on span events only"),
        (
            "graph_changes",
            lambda s: s["filters"][1].update(value="langgraph.graph.change"),
            "no span or event",
        ),
        (
            "tool_duplicates",
            lambda s: s["filters"][1].update(value="true"),
            "not a value the library emits",
        ),
        (
            "tool_duplicates",
            lambda s: s["filters"][0].update(value="langgraph.tool.call"),
            "no span or event",
        ),
        (
            "thread_growth",
            lambda s: s["calculations"][0].update(column="langgraph.thread.checkpoint"),
            "neither an emitted",
        ),
    ],
)
def test_query_validator_rejects_schema_and_tool_mistakes(
    key: str, mutate: Any, expected: str
) -> None:
    spec = copy.deepcopy(queries()[key])
    assert validate_query_spec(spec, key) == []
    mutate(spec)
    errors = validate_query_spec(spec, "mutated")
    assert any(expected in e for e in errors), errors


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda t: t["query"]["calculations"].append({"op": "COUNT"}), "exactly one calculation"),
        (
            lambda t: t["query"].update(calculations=[{"op": "HEATMAP", "column": "duration_ms"}]),
            "HEATMAP",
        ),
        (lambda t: t.update(frequency=90), "multiple of 60"),
        (lambda t: t["query"].update(time_range=7200), "4 x frequency"),
        (lambda t: t["threshold"].update(op="=="), "threshold needs op"),
        (lambda t: t["query"].update(orders=[{"op": "COUNT"}]), "'orders' not allowed"),
        (
            lambda t: t["query"]["filters"][1].update(value="failed"),
            "not a value the library emits",
        ),
    ],
)
def test_trigger_validator_rejects(mutate: Any, expected: str) -> None:
    trig = copy.deepcopy(triggers()["task_errors"])
    mutate(trig)
    errors = validate_trigger(trig, "mutated")
    assert any(expected in e for e in errors), errors


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda b: b.update(type="classic"), "flexible"),
        (lambda b: b["panels"][0]["query_panel"].update(query_id="@query:nope"), "existing file"),
        (lambda b: b["panels"][0]["position"].update(width=13), "12-column"),
        (lambda b: b["panels"][0].update(type="graph"), "type 'graph'"),
    ],
)
def test_board_validator_rejects(mutate: Any, expected: str) -> None:
    board = copy.deepcopy(load(HC / "board.json"))
    mutate(board)
    errors = validate_board(board, set(queries()), set(queries()))
    assert any(expected in e for e in errors), errors


def _first_metric_query(dash: dict[str, Any], needle: str) -> dict[str, Any]:
    for widget in dash["widgets"]:
        for request in widget["definition"].get("requests", []):
            for query in request.get("queries", []):
                if needle in query.get("query", ""):
                    return query
    raise AssertionError(needle)


@pytest.mark.parametrize(
    ("needle", "old", "new", "expected"),
    [
        # the Prometheus spelling of the counter is not what Datadog receives over OTLP
        (
            "checkpoint.resumes",
            "langgraph.checkpoint.resumes",
            "langgraph_checkpoint_resumes_total",
            "is not emitted",
        ),
        (
            "checkpoint.resumes",
            "by {langgraph.resume.kind}",
            "by {langgraph.thread_id}",
            "group-by",
        ),
        (
            "langgraph.operation:put",
            "langgraph.operation:put",
            "langgraph.operation:write",
            "not a value",
        ),
        ("p95:langgraph.checkpoint.operation", "p95:", "p95:", None),
        ("checkpoint.resumes", "sum:", "p95:", "needs a distribution"),
        ("p95:langgraph.checkpoint.thread.checkpoints", "p95:", "p95:", None),
        (
            "schema.mismatches",
            "langgraph.schema.written_version,",
            "langgraph.schema.version,",
            "group-by",
        ),
        ("checkpoint.divergences", ".as_count()", "", "should be read with .as_count()"),
        (
            "graph.changes",
            "by {langgraph.graph.name}",
            "by {langgraph.graph.structure_hash}",
            "group-by",
        ),
        ("concurrent_writes", "sum:", "p95:", "needs a distribution"),
        ("sum:langgraph.checkpoint.channel.size", "sum:", "sum:", None),
        (
            "sum:langgraph.checkpoint.channel.size",
            "channel.size",
            "channel.written",
            "is not emitted",
        ),
    ],
)
def test_dashboard_validator_rejects(needle: str, old: str, new: str, expected: str | None) -> None:
    dash = copy.deepcopy(load(DD / "dashboard.json"))
    query = _first_metric_query(dash, needle)
    query["query"] = query["query"].replace(old, new)
    errors = validate_dashboard(dash)
    if expected is None:
        assert errors == []
    else:
        assert any(expected in e for e in errors), errors


def test_dashboard_validator_rejects_bad_widgets_and_facets() -> None:
    dash = copy.deepcopy(load(DD / "dashboard.json"))
    dash["widgets"][1]["definition"]["type"] = "timeserie"
    dash["layout_type"] = "grid"
    spans = next(
        q
        for w in dash["widgets"]
        for r in w["definition"].get("requests", [])
        for q in r.get("queries", [])
        if q["data_source"] == "spans"
    )
    spans["group_by"][0]["facet"] = "@langgraph.resume_kind"
    spans["compute"]["aggregation"] = "p95"
    errors = validate_dashboard(dash)
    for expected in ("type 'timeserie'", "layout_type", "@langgraph.resume_kind", "aggregation"):
        assert any(expected in e for e in errors), (expected, errors)


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("> 0", "> 1", "thresholds.critical"),
        ("sum(last_5m)", "sum(last 5m)", "does not follow"),
        ("langgraph.checkpoint.divergences", "langgraph.checkpoint.divergence", "not emitted"),
    ],
)
def test_monitor_validator_rejects(old: str, new: str, expected: str) -> None:
    mon = copy.deepcopy(load(DD / "monitors.json")[0])
    mon["query"] = mon["query"].replace(old, new, 1)
    errors = validate_monitor(mon, "mutated")
    assert any(expected in e for e in errors), errors
    mon = copy.deepcopy(load(DD / "monitors.json")[0])
    mon["type"] = "metric alerts"
    assert any("type" in e for e in validate_monitor(mon, "mutated"))


# --- secrets ------------------------------------------------------------------------------------
SECRET_PATTERNS = [
    re.compile(r"\b[0-9a-f]{32}\b"),  # Datadog API key shape
    re.compile(r"\b[0-9a-f]{40}\b"),  # Datadog application key shape
    re.compile(r"\bhc[a-z]{2,3}_[0-9a-z]{20,}\b"),  # Honeycomb ingest/configuration key prefixes
    re.compile(r"(?i)(DD-API-KEY|DD-APPLICATION-KEY|X-Honeycomb-Team)\s*:\s*(?![\"']?\$)[\w-]{8,}"),
    re.compile(r"(?i)(DD_API_KEY|DD_APP_KEY|HONEYCOMB_API_KEY)=(?!\$)\S+"),
]


def find_secrets(text: str) -> list[str]:
    return [m.group(0) for pattern in SECRET_PATTERNS for m in pattern.finditer(text)]


def test_no_secrets_in_the_files() -> None:
    files = [p for p in list(HC.rglob("*")) + list(DD.rglob("*")) if p.is_file()]
    assert files
    for path in files:
        assert find_secrets(path.read_text()) == [], path
    assert find_secrets("curl -H 'DD-API-KEY: 0123456789abcdef0123456789abcdef' ...")
    assert find_secrets("export HONEYCOMB_API_KEY=hcaik_01abcdefghijklmnopqrstuvwxyz")
    assert not find_secrets('-H "DD-API-KEY: ${DD_API_KEY}"')


# --- optional: Datadog's own generated models ---------------------------------------------------
def test_datadog_files_parse_with_the_official_client_models() -> None:
    """Runs when datadog-api-client is installed (not a project dependency).

    Its deserializer does not raise on unknown enum values; it marks the object `_unparsed`,
    so that flag is what is checked (and shown to flip on a mutated copy).
    """
    client_mod = pytest.importorskip("datadog_api_client")
    from datadog_api_client.v1.model.dashboard import Dashboard
    from datadog_api_client.v1.model.monitor import Monitor

    client = client_mod.ApiClient(client_mod.Configuration())

    def parse(data: Any, model: Any) -> Any:
        return client.deserialize(json.dumps(data), (model,), True)

    dash = load(DD / "dashboard.json")
    assert parse(dash, Dashboard)._unparsed is False
    for mon in load(DD / "monitors.json"):
        assert parse(mon, Monitor)._unparsed is False
    bad = copy.deepcopy(dash)
    bad["widgets"][1]["definition"]["type"] = "timeserie"
    assert parse(bad, Dashboard)._unparsed is True


def test_context_cliff_query_trigger_and_monitor() -> None:
    """The context cliff on Honeycomb and Datadog: the threads nearest the window, and an alert
    above 90 % of it, as the Prometheus rule."""
    query = queries()["context_window"]
    assert name_filter(names.SPAN_PUT) in query["filters"]
    assert {"op": "MAX", "column": names.MESSAGES_WINDOW_SHARE} in query["calculations"]
    assert names.THREAD_ID in query["breakdowns"]
    trigger = triggers()["context_window"]
    assert trigger["query"]["calculations"] == [
        {"op": "MAX", "column": names.MESSAGES_WINDOW_SHARE}
    ]
    assert trigger["threshold"] == {"op": ">", "value": 0.9}
    assert trigger["query"]["time_range"] == 900  # as the Prometheus rule's 15m
    monitors = {m["query"] for m in load(DD / "monitors.json")}
    share = f"max:{names.METRIC_WINDOW_SHARE}{{*}} by {{{names.SAVER}}}"
    assert f"max(last_15m):{share} > 0.9" in monitors


def test_retention_query_trigger_widgets_and_monitor() -> None:
    query = queries()["retention"]
    reclaimed = {"op": "SUM", "column": names.RETENTION_BYTES_RECLAIMED}
    assert query["calculations"] == [
        reclaimed,
        {"op": "SUM", "column": names.RETENTION_CHECKPOINTS_REMOVED},
    ]
    # the apply span's totals and the prune span's bytes; never the thread spans (counted twice)
    spans = [names.SPAN_RETENTION_APPLY, names.SPAN_PRUNE]
    assert query["filters"] == [{"column": "name", "op": "in", "value": spans}]
    assert query["breakdowns"] == ["name", names.SAVER]

    failed = triggers()["retention_failed"]
    assert failed["query"]["filters"] == [
        name_filter(names.SPAN_RETENTION_THREAD),
        {"column": names.RETENTION_OUTCOME, "op": "=", "value": "failed"},
    ]
    assert failed["threshold"] == {"op": ">", "value": 0}
    assert failed["query"]["time_range"] == 86400

    dash = load(DD / "dashboard.json")
    retention = [
        q["query"]
        for w in dash["widgets"]
        for r in w["definition"].get("requests", [])
        for q in r.get("queries", [])
        if "retention" in q.get("query", "")
    ]
    for metric in (
        names.METRIC_RETENTION_BYTES_RECLAIMED,
        names.METRIC_RETENTION_CHECKPOINTS_REMOVED,
    ):
        by = f"{{{names.RETENTION_BY},{names.SAVER}}}"
        # any service: the command line reports from its own
        assert f"sum:{metric}{{$env,$saver}} by {by}.as_count()" in retention
    monitors = {m["query"]: m for m in load(DD / "monitors.json")}
    stalled = monitors[
        f"sum(last_1d):sum:{names.METRIC_RETENTION_BYTES_RECLAIMED}{{*}}.as_count() < 1"
    ]
    assert stalled["options"]["notify_no_data"] is True  # no retention at all is no data
