"""User values the library turns into attributes: guarded (never raising) and bounded."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver, empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

import graphs
from helpers import OTel
from langgraph.checkpoint.otel import instrument, names
from langgraph.checkpoint.otel.analysis.resume_events import resume_log
from langgraph.checkpoint.otel.analysis.span_records import span_facts
from langgraph.checkpoint.otel.analysis.text_bounds import UNPRINTABLE, bounded_text

BOUND = names.MAX_ID_LENGTH
THREAD_ATTRIBUTES = (names.THREAD_ID, names.CONVERSATION_ID)


class Unprintable:
    """A thread id whose `str()` raises."""

    def __str__(self) -> str:
        raise RuntimeError("no str for you")


class CountingSaver(InMemorySaver):
    """An in-memory saver with LangGraph's default integer versions: the same on every thread
    that takes the same steps, so per-thread caches keyed by version would collide."""

    get_next_version = BaseCheckpointSaver.get_next_version  # type: ignore[assignment]


def wrapped(otel: OTel, inner: BaseCheckpointSaver[Any] | None = None, **options: Any) -> Any:
    return instrument(
        inner or InMemorySaver(),
        tracer_provider=otel.tracer_provider,
        meter_provider=otel.meter_provider,
        **options,
    )


def cfg(thread_id: Any, **extra: Any) -> Any:
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": "", **extra}}


def outcome(call: Callable[[], Any]) -> tuple[str, str]:
    try:
        call()
    except Exception as exc:
        return type(exc).__name__, str(exc)
    return "ok", ""


# --- a thread id whose str() raises ------------------------------------------------------------


def test_bounded_text() -> None:
    assert bounded_text("t1") == "t1"
    assert bounded_text(7) == "7"
    assert bounded_text(Unprintable()) == UNPRINTABLE
    exact = "x" * BOUND
    assert bounded_text(exact) == exact
    for length in (BOUND + 1, 100_000, 1_000_000, 10**7):
        text = bounded_text("y" * length)
        assert len(text) <= BOUND
        kept = len(text) - len(text[text.index("…") :])
        assert text == "y" * kept + f"…[+{length - kept} chars]"


def test_a_graph_run_with_an_unprintable_thread_id_fails_as_it_does_bare(otel: OTel) -> None:
    # LangGraph itself calls str(thread_id) when a run starts: the wrapper adds nothing
    bare = outcome(
        lambda: graphs.steps_then_ask(InMemorySaver()).invoke({"steps": []}, cfg(Unprintable()))
    )
    assert bare == ("RuntimeError", "no str for you")
    assert (
        outcome(
            lambda: graphs.steps_then_ask(wrapped(otel)).invoke({"steps": []}, cfg(Unprintable()))
        )
        == bare
    )


def test_saver_calls_with_an_unprintable_thread_id_work_as_they_do_bare(otel: OTel) -> None:
    def calls(saver: Any, thread: Any) -> list[tuple[str, str]]:
        checkpoint = empty_checkpoint()
        written = cfg(thread, checkpoint_id=checkpoint["id"])
        return [
            outcome(
                lambda: saver.put(cfg(thread), checkpoint, {"source": "input", "step": -1}, {})
            ),
            outcome(lambda: saver.put_writes(written, [("steps", ["a"])], "task-1", "")),
            outcome(lambda: saver.get_tuple(cfg(thread))),
            outcome(lambda: saver.get_tuple(written)),
            outcome(lambda: list(saver.list(cfg(thread)))),
            outcome(lambda: saver.delete_thread(thread)),
        ]

    # ok_write_spans: the (ok) pending write gets its span too, so every call's span is checked
    bare_saver, saver = InMemorySaver(), wrapped(otel, ok_write_spans=True)
    thread = Unprintable()
    bare = calls(bare_saver, thread)
    assert bare == [("ok", "")] * 6
    assert calls(saver, thread) == bare
    spans = otel.spans()
    assert len(spans) == 6
    assert names.SPAN_PUT_WRITES in {span.name for span in spans}
    for span in spans:  # direct calls, outside any run: the thread, no conversation
        assert span.attributes[names.THREAD_ID] == UNPRINTABLE  # type: ignore[index]
        assert names.CONVERSATION_ID not in (span.attributes or {})


# --- huge thread ids ---------------------------------------------------------------------------

MB = 1_000_000


def assert_bounded(otel: OTel) -> None:
    spans = otel.spans()
    assert spans
    for span in spans:
        for key in THREAD_ATTRIBUTES:
            if key not in (span.attributes or {}):
                continue
            value = str(span.attributes[key])  # type: ignore[index]
            assert len(value) <= BOUND, (span.name, key, len(value))
            assert value.endswith(" chars]") and "…[+" in value


def stored(saver: BaseCheckpointSaver[Any], thread_id: str) -> list[tuple[Any, ...]]:
    inner = getattr(saver, "inner", saver)
    return [
        (
            t.checkpoint["channel_values"],
            {k: v for k, v in t.metadata.items() if k != names.METADATA_KEY},
            sorted(w[1] for w in t.pending_writes or ()),  # interrupt ids differ per run
        )
        for t in inner.list(cfg(thread_id))
    ]


def test_a_1mb_thread_id_is_bounded_on_every_span_and_stored_as_bare(otel: OTel) -> None:
    thread = "t" * MB
    bare_saver, saver = InMemorySaver(), wrapped(otel)
    results = []
    for s in (bare_saver, saver):
        app = graphs.steps_then_ask(s)
        first = app.invoke({"steps": []}, cfg(thread))
        results.append((first["steps"], app.invoke(Command(resume="ok"), cfg(thread))))
    assert results[0] == results[1]
    assert stored(saver, thread) == stored(bare_saver, thread)
    assert_bounded(otel)
    # the offline resume log finds the thread by the id as the spans carry it
    [resumed] = resume_log(span_facts(otel.spans()), thread_id=thread)
    assert resumed.kind == "interrupt"
    saver.delete_thread(thread)
    assert_bounded(otel)
    assert otel.spans()[-1].name == names.SPAN_DELETE_THREAD
    assert stored(saver, thread) == []


def test_two_1mb_thread_ids_that_differ_at_the_end_keep_separate_state(otel: OTel) -> None:
    def interleaved(saver: Any, threads: tuple[str, str], o: OTel) -> list[Any]:
        """Both threads interrupted, then both resumed: per call, the resume kinds and the
        put state hashes on the spans."""
        app = graphs.steps_then_ask(saver)
        seen = []
        steps: list[tuple[Any, Any]] = [
            ({"topic": "one", "steps": []}, threads[0]),
            ({"topic": "two", "steps": []}, threads[1]),
            (Command(resume="first"), threads[0]),
            (Command(resume="second"), threads[1]),
            (None, threads[0]),
            (None, threads[1]),
        ]
        for value, thread in steps:
            o.clear()
            result = app.invoke(value, cfg(thread))
            spans = o.spans()
            seen.append(
                (
                    result["steps"],
                    [s.attributes[names.RESUME_KIND] for s in spans if s.name == names.SPAN_RESUME],  # type: ignore[index]
                    [s.attributes[names.STATE_HASH] for s in spans if s.name == names.SPAN_PUT],  # type: ignore[index]
                )
            )
        return seen

    reference = OTel()
    try:
        expected = interleaved(wrapped(reference, CountingSaver()), ("1", "2"), reference)
    finally:
        reference.shutdown()
    prefix = "p" * MB
    actual = interleaved(wrapped(otel, CountingSaver()), (prefix + "1", prefix + "2"), otel)
    assert actual == expected
    # the two threads did different things: a shared state would have shown
    assert actual[0][2] != actual[1][2]
    assert [kinds for _, kinds, _ in actual] == [
        [],
        [],
        ["interrupt"],
        ["interrupt"],
        ["continue"],
        ["continue"],
    ]


@pytest.mark.parametrize("value", [Unprintable(), "c" * MB])
def test_copy_and_prune_attributes_are_guarded_and_bounded(value: Any, otel: OTel) -> None:
    from langgraph.checkpoint.otel.core.saver import _copy_thread, _delete_thread, _prune

    for attributes in (
        _copy_thread(value, value)[2],
        _delete_thread(value)[2],
        _prune([value], value),
    ):
        for attribute in attributes.values():
            if isinstance(attribute, str):
                assert len(attribute) <= BOUND
                assert attribute == bounded_text(value)
