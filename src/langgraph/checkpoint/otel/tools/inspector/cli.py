"""`langgraph-otel`: look at a thread's checkpoints, resumes, divergences and growth.

    langgraph-otel threads  -s sqlite:///.demo/demo.sqlite
    langgraph-otel timeline THREAD -s sqlite:///.demo/demo.sqlite -s .demo/
    langgraph-otel diff THREAD [A [B]] -s ...       # default: each checkpoint vs its parent
    langgraph-otel resumes THREAD -s ...
    langgraph-otel diverge THREAD -s ...            # exit 1 when something diverged
    langgraph-otel growth THREAD -s ...
    langgraph-otel report THREAD --html report.html -s ...
    langgraph-otel schema [COMMAND]                 # JSON Schema of the --json output

Sources (`-s`, repeatable, or LANGGRAPH_OTEL_SOURCE, space-separated): one saver URL and any
span files or directories (see `inspector.sources`). Every command takes `--json`.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from pydantic import BaseModel
from rich.console import Console
from rich.progress import Progress

from langgraph.checkpoint.otel.analysis.diff import ContentPolicy
from langgraph.checkpoint.otel.options import DivergencePolicy
from langgraph.checkpoint.otel.tools.inspector import model, render, views
from langgraph.checkpoint.otel.tools.inspector.sources import SourceError, Sources, open_sources

PROG = "langgraph-otel"
T = TypeVar("T")

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
        "or a span file or directory of spans*.jsonl; repeatable.",
        envvar="LANGGRAPH_OTEL_SOURCE",
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON (see `schema`).")]
ThreadArgument = Annotated[str, typer.Argument(help="The thread id.")]
RepeatableOption = Annotated[
    list[str] | None,
    typer.Option(
        "--repeatable",
        help="A tool that is safe to run again (never a duplicate_tool_call); repeatable.",
    ),
]


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


def _open(source: list[str] | None) -> Sources:
    flat = [part for item in source for part in item.split()] if source else []
    return open_sources(flat)


@app.command("threads")
def threads_command(
    source: SourceOption = None, as_json: JsonOption = False, repeatable: RepeatableOption = None
) -> None:
    """Threads with checkpoint counts, sizes, last activity, resumes and divergences."""
    with _open(source) as sources:
        view = views.threads(sources, _progress, _policy(repeatable))
        _emit(view, as_json, render.threads)


@app.command("timeline")
def timeline_command(
    thread: ThreadArgument,
    source: SourceOption = None,
    as_json: JsonOption = False,
    repeatable: RepeatableOption = None,
) -> None:
    """Every checkpoint: time, step, source, nodes, changed channels, size, hash, marks."""
    with _open(source) as sources:
        data = views.ThreadData(sources, thread, _policy(repeatable))
        _emit(views.timeline(sources, thread, data), as_json, render.timeline)


@app.command("diff")
def diff_command(
    thread: ThreadArgument,
    a: Annotated[str | None, typer.Argument(help="Checkpoint (id, or its start or end).")] = None,
    b: Annotated[
        str | None, typer.Argument(help="A later checkpoint (default: a's parent to a).")
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
) -> None:
    """Channels that changed between checkpoints (content-free unless --content)."""
    policy = ContentPolicy(redact=_load_hook(redact)) if content else None
    with _open(source) as sources:
        _emit(views.diffs(sources, thread, a, b, content=policy), as_json, render.diffs)


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
    source: SourceOption = None,
    as_json: JsonOption = False,
) -> None:
    """The resume log: when, which kind, from which checkpoint, what ran first."""
    with _open(source) as sources:
        _emit(views.resumes(sources, thread), as_json, render.resumes)


@app.command("diverge")
def diverge_command(
    thread: ThreadArgument,
    source: SourceOption = None,
    as_json: JsonOption = False,
    repeatable: RepeatableOption = None,
) -> None:
    """Run the divergence detectors offline; exit code 1 when something diverged."""
    with _open(source) as sources:
        data = views.ThreadData(sources, thread, _policy(repeatable))
        view = views.divergence_report(sources, thread, data)
    _emit(view, as_json, render.divergences)
    if view.diverged:
        raise typer.Exit(1)


@app.command("growth")
def growth_command(
    thread: ThreadArgument,
    source: SourceOption = None,
    as_json: JsonOption = False,
) -> None:
    """Per-channel size over the steps: which channel bloats."""
    with _open(source) as sources:
        _emit(views.growth(sources, thread), as_json, render.growth)


@app.command("report")
def report_command(
    thread: ThreadArgument,
    html: Annotated[Path, typer.Option("--html", help="Where to write the page.")],
    source: SourceOption = None,
    as_json: JsonOption = False,
    repeatable: RepeatableOption = None,
) -> None:
    """One self-contained HTML page: timeline with branches, resumes, diffs, sizes."""
    from langgraph.checkpoint.otel.tools.inspector.report import write_report

    with _open(source) as sources:
        report = views.build_report(sources, thread, _policy(repeatable))
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
    except SourceError as exc:
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
