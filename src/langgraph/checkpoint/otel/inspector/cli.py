"""`langgraph-otel`: look at a thread's checkpoints, resumes, divergences and growth.

    langgraph-otel threads sqlite:///.demo/demo.sqlite        # the 50 most recent threads
    langgraph-otel threads SOURCE --limit 20 --since 7d --thread-prefix user-
    langgraph-otel timeline THREAD sqlite:///.demo/demo.sqlite .demo/
    langgraph-otel diff THREAD [A [B]] SOURCE...    # default: each checkpoint vs its parent
    langgraph-otel resumes THREAD SOURCE...
    langgraph-otel diverge THREAD SOURCE...         # exit 1 when something diverged
    langgraph-otel growth THREAD SOURCE...
    langgraph-otel report THREAD --html report.html SOURCE...
    langgraph-otel retention SOURCE --keep-last 20 --older-than 30d --idle-longer-than 90d
    langgraph-otel retention SOURCE --policy retention.toml --apply --archive old.jsonl
    langgraph-otel restore old.jsonl SOURCE [--thread T]...
    langgraph-otel schema [COMMAND]                 # JSON Schema of the --json output
    langgraph-otel timeline THREAD SOURCE --trace-url 'https://jaeger.example.com/trace/{trace_id}'

Sources: arguments after the command's own (the thread; diff's checkpoints, told apart by
`looks_like_source`), `-s` (repeatable), or LANGGRAPH_OTEL_SOURCE (space-separated, read when
neither gives one): one saver URL and any span files or directories (see `inspector.sources`).
Every command takes `--json`. `timeline`, `diff`, `resumes`, `diverge` and `report` take
`--trace-url TEMPLATE` (default: LANGGRAPH_OTEL_TRACE_URL; see `trace_links`): every
checkpoint, resume and writer they show links to its trace in the user's backend.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from pydantic import BaseModel
from rich.console import Console
from rich.progress import Progress

from langgraph.checkpoint.otel.analysis.checkpoint_diff import ContentPolicy
from langgraph.checkpoint.otel.inspector import model, render, views
from langgraph.checkpoint.otel.inspector.sources import SourceError, Sources, open_sources
from langgraph.checkpoint.otel.inspector.thread_list import (
    DEFAULT_LIMIT,
    ThreadQuery,
    parse_since,
)
from langgraph.checkpoint.otel.inspector.trace_links import (
    ENV as TRACE_URL_ENV,
)
from langgraph.checkpoint.otel.inspector.trace_links import (
    PLACEHOLDERS,
    TraceUrlError,
    TraceUrlTemplate,
    from_setting,
)
from langgraph.checkpoint.otel.options import DivergencePolicy

PROG = "langgraph-otel"
T = TypeVar("T")
FACTORY = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*")
"""`package.module:factory`, a saver source."""
SOURCE_ENV = "LANGGRAPH_OTEL_SOURCE"

app = typer.Typer(
    name=PROG,
    help="Inspect LangGraph checkpoints: timeline, diffs, resumes, divergences, growth, report.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

SourceOption = Annotated[
    list[str] | None,
    typer.Option(
        "--source",
        "-s",
        help="A saver URL (sqlite:///path, postgresql://..., redis://..., module:factory) "
        "or a span file or directory of spans*.jsonl; repeatable. Default: "
        "LANGGRAPH_OTEL_SOURCE (space-separated), when no source is given as an argument.",
    ),
]
SourceArguments = Annotated[
    list[str] | None,
    typer.Argument(
        help="Sources, as for -s: a saver URL and/or span files or directories.",
        metavar="SOURCE",
        show_default=False,
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON (see `schema`).")]
ThreadArgument = Annotated[str, typer.Argument(help="The thread id.")]
GraphArgument = Annotated[
    str,
    typer.Argument(
        help="The release's graph: MODULE:FACTORY (a compiled graph, or a function returning "
        "one, as in langgraph.json), importable from the current directory.",
        metavar="MODULE:FACTORY",
    ),
]
RepeatableOption = Annotated[
    list[str] | None,
    typer.Option(
        "--repeatable",
        help="A tool that is safe to run again (never a duplicate_tool_call), by name or "
        "shell-style pattern ('transfer_to_*'); repeatable.",
    ),
]
TraceUrlOption = Annotated[
    str | None,
    typer.Option(
        "--trace-url",
        metavar="TEMPLATE",
        help="Link every checkpoint, resume and writer to its trace in your backend: a URL "
        "with placeholders, e.g. 'https://jaeger.example.com/trace/{trace_id}'; "
        f"placeholders: {', '.join('{' + name + '}' for name in PLACEHOLDERS)}. Default: "
        f"{TRACE_URL_ENV}; an empty TEMPLATE turns links off.",
        show_default=False,
    ),
]


def _links(option: str | None) -> TraceUrlTemplate | None:
    """The checked `--trace-url` template (else the variable's), before any source is read."""
    return from_setting(option, os.environ)


def _policy(repeatable: list[str] | None) -> DivergencePolicy:
    return DivergencePolicy(repeatable_tools=frozenset(repeatable or ()))


SCHEMAS: dict[str, type[BaseModel]] = {
    "threads": model.Threads,
    "timeline": model.Timeline,
    "diff": model.Diff,
    "resumes": model.Resumes,
    "diverge": model.Divergences,
    "growth": model.Growth,
    "report": model.Report,
    "compat": model.Compat,
    "replay": model.Replays,
    "retention": model.Retention,
    "restore": model.Restore,
}


def _console() -> Console:
    """Colour and width of the terminal; wide plain text when piped (COLUMNS overrides)."""
    width = None if sys.stdout.isatty() else int(os.environ.get("COLUMNS") or 200)
    return Console(highlight=False, soft_wrap=False, width=width)


def _emit(view: BaseModel, as_json: bool, show: Callable[[Console, Any], None]) -> None:
    if as_json:
        sys.stdout.write(view.model_dump_json(indent=2) + "\n")
    else:
        show(_console(), view)


def _progress(ids: Sequence[str]) -> Iterator[str]:
    """Progress on stderr while reading many threads (only on a terminal)."""
    if len(ids) < 20 or not sys.stderr.isatty():
        yield from ids
        return
    with Progress(console=Console(stderr=True), transient=True) as progress:
        task = progress.add_task("reading threads", total=len(ids))
        for thread_id in ids:
            yield thread_id
            progress.advance(task)


def _open(positional: list[str] | None, source: list[str] | None) -> Sources:
    """The sources given as arguments and with -s; LANGGRAPH_OTEL_SOURCE when neither."""
    given = [*(positional or ()), *(source or ())] or [os.environ.get(SOURCE_ENV, "")]
    return open_sources([part for item in given for part in item.split()])


def looks_like_source(argument: str) -> bool:
    """Whether a positional argument of `diff` names a source rather than a checkpoint: a URL
    (`://`), an existing file or directory, or `module:factory` (checkpoint ids have no `:`)."""
    return "://" in argument or Path(argument).exists() or FACTORY.fullmatch(argument) is not None


def _split_diff_arguments(
    arguments: list[str] | None,
) -> tuple[tuple[str | None, str | None], list[str]]:
    """((A, B), sources) of `diff THREAD [A [B]] [SOURCE]...`."""
    sources = [x for x in arguments or () if looks_like_source(x)]
    checkpoints = [x for x in arguments or () if not looks_like_source(x)]
    if len(checkpoints) > 2:
        raise SourceError(
            f"diff takes at most two checkpoints, got {', '.join(checkpoints)}: a source is "
            "a URL (://), an existing file or directory, or module:factory"
        )
    first, second = [*checkpoints, None, None][:2]
    return (first, second), sources


@app.command("threads")
def threads_command(
    sources_given: SourceArguments = None,
    source: SourceOption = None,
    as_json: JsonOption = False,
    repeatable: RepeatableOption = None,
    limit: Annotated[
        int, typer.Option("--limit", "-n", min=0, help="Threads per page; 0 for all.")
    ] = DEFAULT_LIMIT,
    offset: Annotated[
        int, typer.Option("--offset", min=0, help="Skip this many of the most recent.")
    ] = 0,
    since: Annotated[
        str | None,
        typer.Option(
            "--since",
            help="Only threads active since a date (2026-11-30), a date-time, or a duration "
            "back from now (90m, 12h, 7d, 2w).",
        ),
    ] = None,
    prefix: Annotated[
        str, typer.Option("--thread-prefix", help="Only thread ids starting with this.")
    ] = "",
) -> None:
    """The most recently active threads (one page): checkpoints, sizes, last activity,
    resumes and divergences."""
    query = ThreadQuery(
        limit=limit or None,
        offset=offset,
        since=parse_since(since) if since is not None else None,
        prefix=prefix,
    )
    with _open(sources_given, source) as sources:
        view = views.threads(sources, _progress, _policy(repeatable), query)
        _emit(view, as_json, render.threads)
    if view.more and not as_json:
        _console().print(
            f"more threads match: --offset {offset + len(view.threads)} shows the next page",
            style="dim",
            markup=False,
        )


@app.command("timeline")
def timeline_command(
    thread: ThreadArgument,
    sources_given: SourceArguments = None,
    source: SourceOption = None,
    as_json: JsonOption = False,
    repeatable: RepeatableOption = None,
    trace_url: TraceUrlOption = None,
) -> None:
    """Every checkpoint: time, step, source, nodes, changed channels, size, hash, marks."""
    links = _links(trace_url)
    with _open(sources_given, source) as sources:
        data = views.ThreadData(sources, thread, _policy(repeatable), links=links)
        _emit(views.timeline(sources, thread, data), as_json, render.timeline)


@app.command("diff")
def diff_command(
    thread: ThreadArgument,
    arguments: Annotated[
        list[str] | None,
        typer.Argument(
            help="Up to two checkpoints A and B (an id, or its start or end; A alone: its "
            "parent to A), then sources. An argument with ://, an existing file or "
            "directory, or module:factory is a source.",
            metavar="CHECKPOINT|SOURCE",
            show_default=False,
        ),
    ] = None,
    source: SourceOption = None,
    as_json: JsonOption = False,
    content: Annotated[
        bool,
        typer.Option(
            "--content",
            help="Add JSON patches of the values, through the redaction hook given by "
            "--redact (module:function, called as redact(channel, value)).",
        ),
    ] = False,
    redact: Annotated[str | None, typer.Option(help="module:function redaction hook.")] = None,
    trace_url: TraceUrlOption = None,
) -> None:
    """Channels that changed between checkpoints (content-free unless --content)."""
    links = _links(trace_url)
    policy = ContentPolicy(redact=_load_hook(redact)) if content else None
    (a, b), given = _split_diff_arguments(arguments)
    with _open(given, source) as sources:
        data = views.ThreadData(sources, thread, links=links)
        view = views.diffs(sources, thread, a, b, content=policy, data=data)
        _emit(view, as_json, render.diffs)


def _load_hook(spec: str | None) -> Callable[[str, Any], Any] | None:
    if spec is None:
        return None
    import importlib

    module_name, _, attribute = spec.partition(":")
    try:
        hook = getattr(importlib.import_module(module_name), attribute)
    except Exception as exc:
        raise SourceError(f"--redact {spec}: cannot load ({type(exc).__name__})") from None
    if not callable(hook):
        raise SourceError(f"--redact {spec}: not callable")
    return hook  # type: ignore[no-any-return]


@app.command("resumes")
def resumes_command(
    thread: ThreadArgument,
    sources_given: SourceArguments = None,
    source: SourceOption = None,
    as_json: JsonOption = False,
    trace_url: TraceUrlOption = None,
) -> None:
    """The resume log: when, which kind, from which checkpoint, what ran first."""
    links = _links(trace_url)
    with _open(sources_given, source) as sources:
        data = views.ThreadData(sources, thread, links=links)
        _emit(views.resumes(sources, thread, data), as_json, render.resumes)


@app.command("diverge")
def diverge_command(
    thread: ThreadArgument,
    sources_given: SourceArguments = None,
    source: SourceOption = None,
    as_json: JsonOption = False,
    repeatable: RepeatableOption = None,
    trace_url: TraceUrlOption = None,
) -> None:
    """Run the divergence detectors offline; exit code 1 when something diverged."""
    links = _links(trace_url)
    with _open(sources_given, source) as sources:
        data = views.ThreadData(sources, thread, _policy(repeatable), links=links)
        view = views.divergence_report(sources, thread, data)
    _emit(view, as_json, render.divergences)
    if view.diverged:
        raise typer.Exit(1)


@app.command("compat")
def compat_command(
    graph: GraphArgument,
    source: SourceOption = None,
    as_json: JsonOption = False,
    limit: Annotated[
        int, typer.Option("--limit", "-n", min=0, help="Check at most this many threads; 0: all.")
    ] = 0,
    since: Annotated[
        str | None,
        typer.Option(
            "--since",
            help="Only threads active since a date, a date-time or a duration (7d, 12h).",
        ),
    ] = None,
    prefix: Annotated[
        str, typer.Option("--thread-prefix", help="Only thread ids starting with this.")
    ] = "",
    schema_version: Annotated[
        str | None,
        typer.Option(
            "--schema-version",
            help="The release's schema_version (default: the graph's instrumented saver's).",
        ),
    ] = None,
) -> None:
    """Can the new graph resume the stored threads? Checks the latest checkpoint of each
    thread (read only); exit code 1 when any thread is at risk."""
    from langgraph.checkpoint.otel.inspector import compat

    check = compat.CompatCheck(compat.load_graph(graph), schema_version=schema_version)
    query = ThreadQuery(
        limit=None, since=parse_since(since) if since is not None else None, prefix=prefix
    )
    with _open(None, source) as sources:
        threads = compat.stored_threads(sources, query, limit or None)
        with _counting_progress("checking threads") as advance:
            view = compat.compat_report(graph, check, threads, advance)
    _emit(view, as_json, render.compat)
    if view.at_risk:
        raise typer.Exit(1)


@app.command("replay")
def replay_command(
    graph: Annotated[
        str,
        typer.Argument(
            help="The current code's graph: MODULE:FACTORY, importable from the current directory.",
            metavar="MODULE:FACTORY",
        ),
    ],
    threads: Annotated[list[str], typer.Argument(help="Recorded threads to replay.")],
    source: SourceOption = None,
    as_json: JsonOption = False,
    run_tool: Annotated[
        list[str] | None,
        typer.Option(
            "--run-tool",
            help="A tool that runs for real instead of answering from the recording (a "
            "handoff or sub-agent delegation, which returns a Command), by name or "
            "shell-style pattern ('transfer_to_*'); repeatable.",
        ),
    ] = None,
) -> None:
    """Replay recorded threads against the current code (no model called, no tool body run);
    exit code 1 when one diverges or cannot be replayed."""
    from langgraph.checkpoint.otel.inspector import compat
    from langgraph.checkpoint.otel.testing import replay

    new_graph = compat.load_graph(graph)
    with _open(None, source) as sources:
        if sources.saver is None:
            raise SourceError("replay needs a saver (-s sqlite:///..., postgresql://..., ...)")
        results = [
            replay.replay_thread(new_graph, sources.saver, thread_id, run_tool or ())
            for thread_id in _progress(threads)
        ]
    view = model.Replays(
        graph=graph,
        threads=[
            model.ReplayRow(
                thread_id=r.thread_id,
                ok=r.ok,
                checkpoints=r.checkpoints,
                replayed=r.replayed,
                model_calls=r.model_calls,
                tool_calls=r.tool_calls,
                ends_mid_run=r.ends_mid_run,
                divergence=r.divergence,
                unreplayable=r.unreplayable,
                summary=replay.describe(r),
            )
            for r in results
        ],
    )
    _emit(view, as_json, render.replays)
    if not all(r.ok for r in results):
        raise typer.Exit(1)


@contextlib.contextmanager
def _counting_progress(description: str) -> Iterator[Callable[[], None]]:
    """A progress bar of unknown length on stderr (only on a terminal); yields `advance`."""
    if not sys.stderr.isatty():
        yield lambda: None
        return
    with Progress(console=Console(stderr=True), transient=True) as progress:
        task = progress.add_task(description, total=None)
        yield lambda: progress.advance(task)


def _retention_policy(
    policy_file: Path | None,
    keep_last: int | None,
    older_than: str | None,
    idle_longer_than: str | None,
) -> Any:
    """The policy of `--policy FILE`, the options overriding the file's keys."""
    from langgraph.checkpoint.otel.analysis.retention import (
        PolicyError,
        RetentionPolicy,
        load_policy_file,
        policy_from_mapping,
    )

    try:
        base = load_policy_file(policy_file) if policy_file else RetentionPolicy()
        given: dict[str, Any] = {
            "keep_last": base.keep_last if keep_last is None else keep_last,
            "older_than": base.older_than if older_than is None else older_than,
            "idle_longer_than": base.idle_longer_than
            if idle_longer_than is None
            else idle_longer_than,
        }
        return policy_from_mapping(given)
    except PolicyError as exc:
        raise SourceError(f"retention policy: {exc}") from None


@app.command("retention")
def retention_command(
    sources_given: SourceArguments = None,
    source: SourceOption = None,
    as_json: JsonOption = False,
    keep_last: Annotated[
        int | None,
        typer.Option(
            "--keep-last", min=1, help="Keep the last N checkpoints of each thread and namespace."
        ),
    ] = None,
    older_than: Annotated[
        str | None,
        typer.Option("--older-than", help="Remove checkpoints older than this (30d, 12h, 2w)."),
    ] = None,
    idle_longer_than: Annotated[
        str | None,
        typer.Option(
            "--idle-longer-than",
            help="Remove whole threads whose newest checkpoint is older than this (90d).",
        ),
    ] = None,
    policy_file: Annotated[
        Path | None,
        typer.Option(
            "--policy",
            help='A TOML policy file (keep_last = 20, older_than = "30d", '
            'idle_longer_than = "90d"); options given override its keys.',
        ),
    ] = None,
    prefix: Annotated[
        str, typer.Option("--thread-prefix", help="Only thread ids starting with this.")
    ] = "",
    limit: Annotated[
        int, typer.Option("--limit", "-n", min=0, help="Scan the first N threads by id; 0: all.")
    ] = 0,
    top: Annotated[
        int, typer.Option("--top", min=0, help="Threads, channels and namespaces listed.")
    ] = 10,
    apply: Annotated[
        bool,
        typer.Option(
            "--apply",
            help="Remove what the policy removes, each thread archived first (needs --archive).",
        ),
    ] = False,
    archive: Annotated[
        Path | None,
        typer.Option(
            "--archive", help="The archive file --apply writes (appended to; see `restore`)."
        ),
    ] = None,
    telemetry_dir: Annotated[
        Path | None,
        typer.Option(
            "--telemetry",
            help="With --apply: write its spans and metrics to this directory (OTLP/JSON).",
        ),
    ] = None,
) -> None:
    """Where the bytes are, what a retention policy removes and reclaims, and what it keeps
    against the policy (read only unless --apply). Exit code 1 when the policy removes
    something (with --apply: when a thread was skipped or failed)."""
    import time
    from datetime import UTC, datetime

    from langgraph.checkpoint.otel.retention.scan import plan_threads
    from langgraph.checkpoint.otel.retention.summary import RetentionSummary, applied_view

    policy = _retention_policy(policy_file, keep_last, older_than, idle_longer_than)
    if apply and archive is None:
        raise SourceError("--apply needs --archive PATH: removed checkpoints are archived first")
    if apply and policy == type(policy)():
        raise SourceError("--apply needs a policy (--keep-last, --older-than, ...)")
    if archive is not None and not apply:
        raise SourceError("--archive is only used with --apply")
    query = ThreadQuery(limit=limit or None, prefix=prefix)
    now = datetime.now(UTC)
    started = time.perf_counter()
    summary = RetentionSummary(policy, now, top)
    given = [*(sources_given or ()), *(source or ())] or [os.environ.get(SOURCE_ENV, "")]
    with open_sources([p for item in given for p in item.split()], writable=apply) as sources:
        if sources.saver is None:
            raise SourceError("retention needs a saver (sqlite:///..., postgresql://..., ...)")
        saver = sources.saver
        with _counting_progress("applying" if apply else "planning threads") as advance:
            # a generator: with --apply each thread is planned, summarised (top K only) and
            # applied before the next is read, in memory bounded by a page of threads
            plans = summary.watch(plan_threads(saver, policy, query, now, advance))
            if not apply:
                for _ in plans:
                    pass
                result = None
            else:
                assert archive is not None
                result = _apply(saver, plans, archive, policy, telemetry_dir)
        view = summary.view(sources.saver_url, time.perf_counter() - started)
    if result is not None:
        view.applied = applied_view(result, top)
    _emit(view, as_json, render.retention)
    if view.applied is not None:
        if view.applied.skipped or view.applied.failed:
            raise typer.Exit(1)
    elif view.remove_checkpoints:
        raise typer.Exit(1)


def _apply(saver: Any, plans: Any, archive: Path, policy: Any, telemetry_dir: Path | None) -> Any:
    from langgraph.checkpoint.otel.retention.apply import ApplyError, apply_plans
    from langgraph.checkpoint.otel.retention.telemetry import cli_telemetry

    try:
        with cli_telemetry(telemetry_dir) as telemetry:
            return apply_plans(saver, plans, archive, policy=policy, telemetry=telemetry)
    except ApplyError as exc:
        raise SourceError(str(exc)) from None


@app.command("restore")
def restore_command(
    archive: Annotated[Path, typer.Argument(help="An archive written by retention --apply.")],
    sources_given: SourceArguments = None,
    source: SourceOption = None,
    as_json: JsonOption = False,
    threads: Annotated[
        list[str] | None,
        typer.Option("--thread", help="Only this thread (repeatable); default: every thread."),
    ] = None,
    telemetry_dir: Annotated[
        Path | None,
        typer.Option("--telemetry", help="Write its spans and metrics to this directory."),
    ] = None,
) -> None:
    """Put archived checkpoints back (the thread's history reads as before); exit code 1 when
    some archive lines could not be read."""
    from langgraph.checkpoint.otel.retention.restore import restore_archive
    from langgraph.checkpoint.otel.retention.telemetry import cli_telemetry

    if not archive.is_file():
        raise SourceError(f"{archive}: no such archive")
    given = [*(sources_given or ()), *(source or ())] or [os.environ.get(SOURCE_ENV, "")]
    with open_sources([p for item in given for p in item.split()], writable=True) as sources:
        if sources.saver is None:
            raise SourceError("restore needs a saver (sqlite:///..., postgresql://..., ...)")
        with cli_telemetry(telemetry_dir) as telemetry:
            result = restore_archive(
                sources.saver,
                archive,
                thread_ids=set(threads) if threads else None,
                telemetry=telemetry,
            )
        view = model.Restore(
            archive=str(archive),
            source=sources.saver_url,
            threads=result.threads,
            checkpoints=result.checkpoints,
            writes=result.writes,
            incomplete=result.incomplete,
            already_present=result.already_present,
        )
    _emit(view, as_json, render.restore)
    if view.incomplete:
        raise typer.Exit(1)


@app.command("growth")
def growth_command(
    thread: ThreadArgument,
    sources_given: SourceArguments = None,
    source: SourceOption = None,
    as_json: JsonOption = False,
) -> None:
    """Per-channel size over the steps: which channel bloats."""
    with _open(sources_given, source) as sources:
        _emit(views.growth(sources, thread), as_json, render.growth)


@app.command("report")
def report_command(
    thread: ThreadArgument,
    html: Annotated[Path, typer.Option("--html", help="Where to write the page.")],
    sources_given: SourceArguments = None,
    source: SourceOption = None,
    as_json: JsonOption = False,
    repeatable: RepeatableOption = None,
    trace_url: TraceUrlOption = None,
) -> None:
    """One self-contained HTML page: timeline with branches, resumes, diffs, sizes."""
    from langgraph.checkpoint.otel.inspector.report import write_report

    links = _links(trace_url)
    with _open(sources_given, source) as sources:
        report = views.build_report(sources, thread, _policy(repeatable), links=links)
    path = write_report(report, html)
    if as_json:
        sys.stdout.write(report.model_dump_json(indent=2) + "\n")
    else:
        _console().print(f"report of {thread} written to {path} (open it in a browser)")


@app.command("schema")
def schema_command(
    command: Annotated[str | None, typer.Argument(help="One command's schema.")] = None,
) -> None:
    """The JSON Schema of each command's --json output."""
    if command is not None and command not in SCHEMAS:
        raise SourceError(f"no command {command!r}; one of: {', '.join(SCHEMAS)}")
    chosen = {command: SCHEMAS[command]} if command else SCHEMAS
    schemas = {name: m.model_json_schema() for name, m in chosen.items()}
    sys.stdout.write(json.dumps(schemas[command] if command else schemas, indent=2) + "\n")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the inspector; returns the exit code (2 for bad input, with one line on stderr)."""
    command = typer.main.get_command(app)
    try:
        command.main(args=list(argv) if argv is not None else None, prog_name=PROG)
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    except (SourceError, TraceUrlError) as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        if os.environ.get("LANGGRAPH_OTEL_DEBUG"):
            raise
        first = (str(exc).strip().splitlines() or [""])[0]
        print(
            f"{PROG}: error: {type(exc).__name__}: {first} "
            "(LANGGRAPH_OTEL_DEBUG=1 shows the traceback)",
            file=sys.stderr,
        )
        return 2
    return 0


def console_script() -> None:  # the `langgraph-otel` entry point
    sys.exit(main())
