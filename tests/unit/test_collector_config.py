"""Structural checks of the OpenTelemetry Collector configs in ``collector-config/``.

No ``otelcol-contrib`` binary can be installed on these machines, so the configs are checked the
way the Collector would read them: every file is parsed, each overlay under ``exporters/`` is
merged onto ``gateway.yaml`` as ``otelcol-contrib --config gateway.yaml --config <overlay>``
merges (maps deep-merged, later file wins; lists replaced, not appended), and the effective
config's wiring is checked: references, unused components, connector pipeline types, signal
support, component types of the targeted contrib release, secrets, span-metrics cardinality,
and that tail sampling keys on names the library really emits.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from langgraph.checkpoint.otel import names
from suite_paths import REPO as ROOT

CONFIG_DIR = ROOT / "collector-config"

# --------------------------------------------------------------------------------------------
# What the configs are written for, and where that was checked
# --------------------------------------------------------------------------------------------

OTELCOL_CONTRIB_VERSION = "v0.136.0"

# Component list of the otelcol-contrib distribution: the builder manifest in
# open-telemetry/opentelemetry-collector-releases, at a commit where every component module is
# pinned at v0.136.0:
#   https://github.com/open-telemetry/opentelemetry-collector-releases/blob/
#   008cde8ca78cc0286ee3f0de92fa95e1641a445a/distributions/otelcol-contrib/manifest.yaml
# The config TYPE of each component is the `type:` of its metadata.yaml (e.g.
# processor/tailsamplingprocessor/metadata.yaml -> `tail_sampling`); signals and connector
# pipeline pairs are the `stability:` entries of the same files (and the connectors' README
# "Supported Pipeline Types" tables).
# Only the components these configs use are listed; add a row (with its module from the
# manifest) before using another one.
_CONTRIB = "github.com/open-telemetry/opentelemetry-collector-contrib"
_CORE = "go.opentelemetry.io/collector"
ALL = frozenset({"traces", "metrics", "logs"})

COMPONENTS: dict[str, dict[str, tuple[str, frozenset[str]]]] = {
    # kind -> type -> (module in the v0.136.0 manifest, pipeline types it supports)
    "receivers": {
        "otlp": (f"{_CORE}/receiver/otlpreceiver", ALL),
    },
    "processors": {
        "batch": (f"{_CORE}/processor/batchprocessor", ALL),
        "memory_limiter": (f"{_CORE}/processor/memorylimiterprocessor", ALL),
        "attributes": (f"{_CONTRIB}/processor/attributesprocessor", ALL),
        "resourcedetection": (f"{_CONTRIB}/processor/resourcedetectionprocessor", ALL),
        "tail_sampling": (f"{_CONTRIB}/processor/tailsamplingprocessor", frozenset({"traces"})),
    },
    "exporters": {
        "debug": (f"{_CORE}/exporter/debugexporter", ALL),
        "otlp": (f"{_CORE}/exporter/otlpexporter", ALL),
        "otlphttp": (f"{_CORE}/exporter/otlphttpexporter", ALL),
        # metrics support is "development" and must not route by traceID: traces/logs only here
        "loadbalancing": (
            f"{_CONTRIB}/exporter/loadbalancingexporter",
            frozenset({"traces", "logs"}),
        ),
        "prometheusremotewrite": (
            f"{_CONTRIB}/exporter/prometheusremotewriteexporter",
            frozenset({"metrics"}),
        ),
        "datadog": (f"{_CONTRIB}/exporter/datadogexporter", ALL),
    },
    "connectors": {
        "forward": (f"{_CORE}/connector/forwardconnector", ALL),
        "spanmetrics": (f"{_CONTRIB}/connector/spanmetricsconnector", frozenset()),
        "datadog": (f"{_CONTRIB}/connector/datadogconnector", frozenset()),
    },
    "extensions": {
        "health_check": (f"{_CONTRIB}/extension/healthcheckextension", frozenset()),
    },
}

# connector type -> allowed (exporter-side pipeline type, receiver-side pipeline type)
CONNECTOR_PAIRS: dict[str, frozenset[tuple[str, str]]] = {
    "forward": frozenset({("traces", "traces"), ("metrics", "metrics"), ("logs", "logs")}),
    "spanmetrics": frozenset({("traces", "metrics")}),
    "datadog": frozenset({("traces", "metrics"), ("traces", "traces")}),
}

KINDS = ("receivers", "processors", "exporters", "connectors", "extensions")
PIPELINE_TYPES = ("traces", "metrics", "logs")

# --------------------------------------------------------------------------------------------
# Loading and merging
# --------------------------------------------------------------------------------------------


def load(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text())
    assert isinstance(data, dict), f"{path}: top level must be a map"
    return data


def merge(base: Any, overlay: Any) -> Any:
    """Merge like the Collector's confmap does for repeated --config: maps deep-merged (the later
    source wins on conflicts), every other value, lists included, replaced by the later one."""
    if isinstance(base, dict) and isinstance(overlay, dict):
        out = dict(base)
        for key, value in overlay.items():
            out[key] = merge(base[key], value) if key in base else copy.deepcopy(value)
        return out
    return copy.deepcopy(overlay)


OVERLAYS = sorted((CONFIG_DIR / "exporters").glob("*.yaml"))
STANDALONE = ["agent.yaml", "local.yaml"]


def effective_configs() -> Iterator[tuple[str, dict[str, Any]]]:
    for name in STANDALONE:
        yield name, load(CONFIG_DIR / name)
    gateway = load(CONFIG_DIR / "gateway.yaml")
    for overlay in OVERLAYS:
        yield f"gateway.yaml + exporters/{overlay.name}", merge(gateway, load(overlay))


EFFECTIVE = dict(effective_configs())


@pytest.fixture(params=sorted(EFFECTIVE), ids=lambda k: k.replace(" ", ""))
def config(request: pytest.FixtureRequest) -> dict[str, Any]:
    return EFFECTIVE[request.param]


def ctype(component_id: str) -> str:
    """The component TYPE: `otlp/jaeger` -> `otlp`."""
    return component_id.split("/", 1)[0]


def pipelines(cfg: dict[str, Any]) -> dict[str, dict[str, Any]]:
    result = cfg["service"]["pipelines"]
    assert isinstance(result, dict)
    return result


def section(cfg: dict[str, Any], kind: str) -> dict[str, Any]:
    return cfg.get(kind) or {}


def walk(node: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    if isinstance(node, dict):
        for key, value in node.items():
            yield from walk(value, (*path, str(key)))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from walk(value, (*path, str(i)))
    else:
        yield path, node


# --------------------------------------------------------------------------------------------
# The merge itself
# --------------------------------------------------------------------------------------------


def test_merge_semantics_match_the_collector() -> None:
    base = {"a": {"x": 1, "l": [1, 2]}, "p": {"e": None}}
    over = {"a": {"y": 2, "l": [3]}, "p": {"e": [9]}}
    assert merge(base, over) == {"a": {"x": 1, "y": 2, "l": [3]}, "p": {"e": [9]}}
    assert base == {"a": {"x": 1, "l": [1, 2]}, "p": {"e": None}}


def test_every_profile_and_overlay_is_covered() -> None:
    files = {p.name for p in CONFIG_DIR.glob("*.yaml")}
    assert files == {"agent.yaml", "gateway.yaml", "local.yaml"}
    assert {p.name for p in OVERLAYS} >= {
        "jaeger.yaml",
        "tempo-prometheus.yaml",
        "honeycomb.yaml",
        "datadog.yaml",
    }
    assert len(EFFECTIVE) == len(STANDALONE) + len(OVERLAYS)


def test_gateway_needs_an_overlay() -> None:
    """gateway.yaml alone has output pipelines without exporters; every overlay fills them all."""
    gateway = load(CONFIG_DIR / "gateway.yaml")
    open_pipelines = {k for k, p in pipelines(gateway).items() if not p.get("exporters")}
    assert open_pipelines == {"traces/sampled", "metrics", "metrics/spanmetrics"}
    assert not section(gateway, "exporters")
    for overlay in OVERLAYS:
        ov = load(overlay)
        assert set(ov) <= {"exporters", "connectors", "service"}, overlay.name
        for name in open_pipelines:
            assert pipelines(ov)[name].get("exporters"), f"{overlay.name}: {name} has no exporter"


# --------------------------------------------------------------------------------------------
# Wiring of each effective config
# --------------------------------------------------------------------------------------------


def test_top_level_keys(config: dict[str, Any]) -> None:
    assert set(config) <= {*KINDS, "service"}
    assert set(config["service"]) <= {"extensions", "pipelines", "telemetry"}


def test_pipelines_are_complete_and_typed(config: dict[str, Any]) -> None:
    for pid, p in pipelines(config).items():
        assert ctype(pid) in PIPELINE_TYPES, pid
        assert set(p) <= {"receivers", "processors", "exporters"}, pid
        assert p.get("receivers"), f"{pid}: no receiver"
        assert p.get("exporters"), f"{pid}: no exporter"
        for key in ("receivers", "processors", "exporters"):
            ids = p.get(key) or []
            assert len(ids) == len(set(ids)), f"{pid}.{key} lists a component twice"


def test_every_referenced_component_is_defined(config: dict[str, Any]) -> None:
    receivers = set(section(config, "receivers"))
    processors = set(section(config, "processors"))
    exporters = set(section(config, "exporters"))
    connectors = set(section(config, "connectors"))
    for pid, p in pipelines(config).items():
        assert set(p["receivers"]) <= receivers | connectors, pid
        assert set(p.get("processors") or []) <= processors, pid
        assert set(p["exporters"]) <= exporters | connectors, pid
    assert set(config["service"].get("extensions") or []) <= set(section(config, "extensions"))


def test_every_defined_component_is_used(config: dict[str, Any]) -> None:
    ps = pipelines(config).values()
    used_receivers = {c for p in ps for c in p["receivers"]}
    used_processors = {c for p in ps for c in p.get("processors") or []}
    used_exporters = {c for p in ps for c in p["exporters"]}
    assert set(section(config, "receivers")) <= used_receivers
    assert set(section(config, "processors")) <= used_processors
    assert set(section(config, "exporters")) <= used_exporters
    for conn in section(config, "connectors"):
        assert conn in used_exporters, f"connector {conn} is never an exporter"
        assert conn in used_receivers, f"connector {conn} is never a receiver"
    assert set(section(config, "extensions")) == set(config["service"].get("extensions") or [])


def test_connectors_join_supported_pipeline_types(config: dict[str, Any]) -> None:
    for conn in section(config, "connectors"):
        pairs = CONNECTOR_PAIRS[ctype(conn)]
        as_exporter = {ctype(pid) for pid, p in pipelines(config).items() if conn in p["exporters"]}
        as_receiver = {ctype(pid) for pid, p in pipelines(config).items() if conn in p["receivers"]}
        for a in as_exporter:
            assert any((a, b) in pairs for b in as_receiver), f"{conn}: {a} -> {as_receiver}"
        for b in as_receiver:
            assert any((a, b) in pairs for a in as_exporter), f"{conn}: {as_exporter} -> {b}"


def test_components_support_their_pipeline_type(config: dict[str, Any]) -> None:
    connectors = set(section(config, "connectors"))
    for pid, p in pipelines(config).items():
        signal = ctype(pid)
        for kind, key in (
            ("receivers", "receivers"),
            ("processors", "processors"),
            ("exporters", "exporters"),
        ):
            for cid in p.get(key) or []:
                if cid in connectors:
                    continue
                supported = COMPONENTS[kind][ctype(cid)][1]
                assert signal in supported, f"{cid} does not support {signal} ({pid})"


def test_component_types_exist_in_the_targeted_contrib_release(config: dict[str, Any]) -> None:
    for kind in KINDS:
        for cid in section(config, kind):
            assert ctype(cid) in COMPONENTS[kind], (
                f"{kind[:-1]} type {ctype(cid)!r} is not in the otelcol-contrib "
                f"{OTELCOL_CONTRIB_VERSION} allowlist"
            )


# --------------------------------------------------------------------------------------------
# Secrets and environment placeholders
# --------------------------------------------------------------------------------------------

ENV_REF = re.compile(r"\$\{env:[A-Za-z_][A-Za-z0-9_]*(?::-[^}]*)?\}")
SECRET_REF = re.compile(r"\$\{env:[A-Z_][A-Z0-9_]*\}")  # whole value, no default
SECRET_KEY = re.compile(
    r"(^|[-_.])(api[-_]?key|apikey|token|password|passwd|secret|authorization|"
    r"x-honeycomb-team|dd-api-key|x-api-key)$",
    re.I,
)


def _all_files() -> list[Path]:
    return [*sorted(CONFIG_DIR.glob("*.yaml")), *OVERLAYS]


@pytest.mark.parametrize("path", _all_files(), ids=lambda p: p.name)
def test_placeholders_use_the_env_provider(path: Path) -> None:
    for _, value in walk(load(path)):
        if isinstance(value, str) and "$" in value:
            rest = ENV_REF.sub("", value)
            assert "$" not in rest, f"{path.name}: {value!r} is not a ${{env:NAME}} placeholder"


@pytest.mark.parametrize("path", _all_files(), ids=lambda p: p.name)
def test_no_secret_literals(path: Path) -> None:
    data = load(path)
    for keys, value in walk(data):
        is_secret = bool(SECRET_KEY.search(keys[-1])) or keys[-2:] == ("api", "key")
        if is_secret:
            assert isinstance(value, str) and SECRET_REF.fullmatch(value), (
                f"{path.name}: {'.'.join(keys)} must be exactly ${{env:NAME}}, got {value!r}"
            )
        if "headers" in keys:
            assert isinstance(value, str) and ENV_REF.fullmatch(value), (
                f"{path.name}: header {'.'.join(keys)} must come from the environment"
            )
    # nothing that looks like a key outside a placeholder (32 hex: Datadog; long tokens)
    text = ENV_REF.sub("", path.read_text())
    text = "\n".join(line.split("#", 1)[0] for line in text.splitlines())
    assert not re.search(r"\b[0-9a-fA-F]{32,}\b", text), path.name
    assert not re.search(r"\b(?=[A-Za-z0-9]*\d)(?=[A-Za-z0-9]*[A-Z])[A-Za-z0-9]{22,}\b", text)


def test_backend_keys_come_from_the_environment() -> None:
    hc = load(CONFIG_DIR / "exporters" / "honeycomb.yaml")
    for exporter in section(hc, "exporters").values():
        assert exporter["headers"]["x-honeycomb-team"] == "${env:HONEYCOMB_API_KEY}"
    dd = load(CONFIG_DIR / "exporters" / "datadog.yaml")
    assert section(dd, "exporters")["datadog"]["api"]["key"] == "${env:DD_API_KEY}"


# --------------------------------------------------------------------------------------------
# Tiers: load balancing, tail sampling, span metrics
# --------------------------------------------------------------------------------------------

# Low-cardinality contract attributes (bounded by code: operations, saver classes, kinds, node and
# channel names, exception classes). Everything per-thread, per-checkpoint or per-task is not.
LOW_CARDINALITY = {
    names.OPERATION,
    names.SAVER,
    names.RESUME_KIND,
    names.ERROR_TYPE,
    names.SOURCE,
    names.TASK_NODE,
    names.TASK_OUTCOME,
    names.CHANNEL_NAME,
    names.DIVERGENCE_KIND,
}
UNBOUNDED = {
    names.THREAD_ID,
    names.CONVERSATION_ID,
    names.CHECKPOINT_ID,
    names.CHECKPOINT_NS,
    names.PARENT_ID,
    names.TASK_ID,
    names.TASK_PATH,
    names.STATE_HASH,
    names.CHANNEL_HASH,
    names.RESUME_FROM_CHECKPOINT_ID,
    names.DIVERGENCE_REFERENCE_CHECKPOINT_ID,
    names.SOURCE_THREAD_ID,
    names.TARGET_THREAD_ID,
}


def test_agent_routes_traces_by_trace_id() -> None:
    agent = load(CONFIG_DIR / "agent.yaml")
    lb = section(agent, "exporters")["loadbalancing"]
    assert lb["routing_key"] == "traceID"
    assert len(set(lb["resolver"]) & {"static", "dns", "k8s"}) == 1
    assert "endpoint" not in lb["protocol"]["otlp"]
    for pid, p in pipelines(agent).items():
        if "loadbalancing" in p["exporters"]:
            assert ctype(pid) == "traces"
    assert pipelines(agent)["metrics"]["exporters"] == ["otlp/gateway"]
    assert section(agent, "processors")["resourcedetection"]["detectors"] == ["env", "system"]
    for p in pipelines(agent).values():
        assert p["processors"][0] == "memory_limiter"
        assert p["processors"][-1] == "batch"


def test_spanmetrics_dimensions_are_low_cardinality() -> None:
    gateway = load(CONFIG_DIR / "gateway.yaml")
    sm = section(gateway, "connectors")["spanmetrics"]
    dims = [d["name"] for d in sm["dimensions"]]
    dims += [d["name"] for d in (sm.get("events") or {}).get("dimensions") or []]
    assert {names.OPERATION, names.SAVER, names.RESUME_KIND} <= set(dims)
    assert set(dims) <= LOW_CARDINALITY, set(dims) - LOW_CARDINALITY
    assert not set(dims) & UNBOUNDED
    for d in dims:
        assert "thread" not in d and "checkpoint.id" not in d and "hash" not in d


def test_spanmetrics_sees_every_span_before_sampling() -> None:
    for name, cfg in EFFECTIVE.items():
        if not name.startswith("gateway"):
            continue
        ps = pipelines(cfg)
        first = ps["traces"]
        assert first["receivers"] == ["otlp"]
        assert "tail_sampling" not in (first.get("processors") or []), name
        assert "spanmetrics" in first["exporters"], name
        assert "tail_sampling" in ps["traces/sampled"]["processors"], name
        assert ps["metrics"]["receivers"] == ["otlp"], "the library's own metrics pass through"
        for pid, p in ps.items():
            if ctype(pid) == "metrics":
                assert "tail_sampling" not in (p.get("processors") or [])


def _policies(policies: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for policy in policies:
        yield policy
        for nested in ("and", "composite", "drop"):
            sub = policy.get(nested) or {}
            for key in ("and_sub_policy", "composite_sub_policy", "drop_sub_policy"):
                yield from _policies(sub.get(key) or [])


OTTL_ATTRIBUTE = re.compile(r'attributes\["([^"]+)"\]')
OTTL_NAME = re.compile(r'(?<![\w.])name\s*==\s*"([^"]+)"')
OTTL_SCOPE = re.compile(r'\binstrumentation_scope\.name\s*==\s*"([^"]+)"')


def test_tail_sampling_keys_on_names_the_library_emits() -> None:
    gateway = load(CONFIG_DIR / "gateway.yaml")
    ts = section(gateway, "processors")["tail_sampling"]
    emitted_attrs = {
        v
        for k, v in vars(names).items()
        if k.isupper() and isinstance(v, str) and v.startswith(("langgraph.", "gen_ai.", "error."))
    }
    span_names = set(names.spans().values())
    keys: set[str] = set()
    spans: set[str] = set()
    scopes: set[str] = set()
    kinds: dict[str, list[dict[str, Any]]] = {}
    for policy in _policies(ts["policies"]):
        kinds.setdefault(policy["type"], []).append(policy)
        for attr_type in ("string_attribute", "boolean_attribute", "numeric_attribute"):
            if attr_type in policy:
                keys.add(policy[attr_type]["key"])
        for condition in (policy.get("ottl_condition") or {}).get("span") or []:
            keys.update(OTTL_ATTRIBUTE.findall(condition))
            spans.update(OTTL_NAME.findall(condition))
            scopes.update(OTTL_SCOPE.findall(condition))
    assert keys, "no attribute policy"
    assert keys <= emitted_attrs, keys - emitted_attrs
    assert spans <= span_names, spans - span_names
    assert scopes <= {names.SCOPE}, scopes

    # error, resume, divergence are always kept; the rest is sampled
    assert any(p["status_code"]["status_codes"] == ["ERROR"] for p in kinds["status_code"])
    assert names.SPAN_RESUME in spans or names.RESUME_KIND in keys
    assert names.RESUME_KIND in keys
    # runs that resumed or stopped at an interrupt are kept whole
    run_conditions = [
        c
        for p in kinds["ottl_condition"]
        for c in p["ottl_condition"]["span"]
        if f'attributes["{names.GEN_AI_OPERATION_NAME}"] == "{names.SPAN_RUN}"' in c
    ]
    assert run_conditions and all(f'"{names.SCOPE}"' in c for c in run_conditions)
    string_policies = {
        (p["string_attribute"]["key"], tuple(p["string_attribute"]["values"]))
        for p in kinds["string_attribute"]
    }
    assert (names.RUN_OUTCOME, ("interrupted",)) in string_policies
    assert (names.TASK_OUTCOME, ("interrupt",)) in string_policies
    assert any(
        p["boolean_attribute"] == {"key": names.DIVERGENCE_DETECTED, "value": True}
        for p in kinds["boolean_attribute"]
    )
    assert len(kinds["probabilistic"]) == 1
    # a sampled-out decision must never drop an error/resume/divergence trace
    assert "drop" not in kinds
    for policy in _policies(ts["policies"]):
        for attr_type in ("string_attribute", "boolean_attribute", "numeric_attribute"):
            assert not (policy.get(attr_type) or {}).get("invert_match"), policy["name"]


def test_gateway_tags_span_metrics_with_its_identity() -> None:
    gateway = load(CONFIG_DIR / "gateway.yaml")
    actions = section(gateway, "processors")["attributes/gateway"]["actions"]
    assert actions == [
        {
            "key": "collector.gateway.id",
            "value": "${env:OTEL_GATEWAY_ID:-gateway}",
            "action": "upsert",
        }
    ]
    assert "attributes/gateway" in pipelines(gateway)["metrics/spanmetrics"]["processors"]
    assert "attributes/gateway" not in pipelines(gateway)["metrics"]["processors"]


def test_datadog_connector_is_upstream_of_sampling() -> None:
    cfg = EFFECTIVE["gateway.yaml + exporters/datadog.yaml"]
    ps = pipelines(cfg)
    assert "datadog/connector" in ps["traces"]["exporters"]
    assert "datadog/connector" in ps["metrics/datadog"]["receivers"]
    assert ps["traces/sampled"]["exporters"] == ["datadog"]


def test_local_profile_is_a_single_collector() -> None:
    local = load(CONFIG_DIR / "local.yaml")
    assert "tail_sampling" not in section(local, "processors")
    assert "loadbalancing" not in section(local, "exporters")
    grpc = section(local, "receivers")["otlp"]["protocols"]["grpc"]["endpoint"]
    jaeger = section(local, "exporters")["otlp/jaeger"]["endpoint"]
    assert grpc.startswith("localhost:")
    assert not jaeger.endswith(":4317}"), "Jaeger's OTLP port must not clash with the collector's"
