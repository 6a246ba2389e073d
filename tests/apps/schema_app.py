"""A LangGraph app whose state schema changed between two releases, run as a subprocess by
``test_schema_versions.py``: release "1" keeps a ``title``; release "2" calls it ``subject``
and adds a ``meta`` dict with a priority (stored as a blob where savers store values per
channel version).

    python schema_app.py BACKEND THREAD_ID SPANS_FILE

runs release 1 (the schema version comes from ``LANGGRAPH_OTEL_SCHEMA_VERSION``, as in a
deployment) until it stops at the review interrupt, and prints the interrupt as JSON.
"""

from __future__ import annotations

import argparse
import json
import operator
import sys
from typing import Annotated, Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt

from crash_app import open_saver, span_file_provider
from langgraph.checkpoint.otel import Migrations, instrument


class State(TypedDict, total=False):
    title: str
    subject: str
    meta: dict[str, str]
    log: Annotated[list[str], operator.add]


def build_graph() -> StateGraph[State]:
    def draft(state: State) -> dict[str, Any]:
        return {"title": "quarterly report", "log": ["draft"]}

    def review(state: State) -> dict[str, Any]:
        return {"log": [f"review:{interrupt('approve?')}"]}

    def finish(state: State) -> dict[str, Any]:
        # release 2 reads the renamed and the added field
        priority = (state.get("meta") or {}).get("priority")
        return {"log": [f"finish:{state.get('subject')}:{priority}"]}

    builder = StateGraph(State)
    builder.add_node("draft", draft)
    builder.add_node("review", review)
    builder.add_node("finish", finish)
    builder.add_edge(START, "draft")
    builder.add_edge("draft", "review")
    builder.add_edge("review", "finish")
    builder.add_edge("finish", END)
    return builder


def release_2_migrations() -> Migrations:
    """1 -> 1.5 renames ``title`` to ``subject``; 1.5 -> 2 adds ``meta``."""
    migrations = Migrations()

    @migrations.register("1", "1.5")
    def rename_title(values: dict[str, Any]) -> dict[str, Any]:
        values["subject"] = values.pop("title")
        return values

    @migrations.register("1.5", "2")
    def add_priority(values: dict[str, Any]) -> dict[str, Any]:
        return {**values, "meta": {"priority": "normal"}}

    return migrations


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("backend")
    parser.add_argument("thread_id")
    parser.add_argument("spans_file")
    args = parser.parse_args(argv)
    tracer_provider = span_file_provider("schema-app", "release-1", args.spans_file)
    try:
        with open_saver(args.backend) as saver:
            graph = build_graph().compile(
                checkpointer=instrument(saver, tracer_provider=tracer_provider)
            )
            config: Any = {"configurable": {"thread_id": args.thread_id}}
            result = graph.invoke({"log": ["input"]}, config)
    finally:
        tracer_provider.shutdown()
    print(json.dumps([i.value for i in result.get("__interrupt__", ())]), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
