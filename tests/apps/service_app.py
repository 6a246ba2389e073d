"""A support-desk service as a team runs one: Starlette under uvicorn, one tool-calling agent
(`create_react_agent`) on `AsyncPostgresSaver`, tools that open spans of their own (the CRM
and payment clients), and a refund that waits for a human's approval (`interrupt()`).

    python service_app.py MODE DATABASE_URL PORT [SPANS_FILE]

``DESK_SAVE_LATENCY_MS`` adds that much to each checkpoint save (a database across a network).

MODE is ``bare`` (no telemetry), ``ours`` (`instrument(AsyncPostgresSaver)`) or ``genai``
(the bare saver and the official OpenTelemetry GenAI LangChain instrumentation, for `make
bench`). Spans go through a `BatchSpanProcessor` to SPANS_FILE (OTLP JSON lines), flushed on
a clean shutdown (SIGTERM).

Every request drives one conversation turn to its next stop and is idempotent, so a client
retries it after a cancellation or a restart and the conversation goes on where it is:

    POST /threads/{id}/say      {"turn": n, "text": ...}  enter turn n (or continue it)
    POST /threads/{id}/approve  {"turn": n}               approve turn n's refund (or continue)
    GET  /threads/{id}          the thread's messages, content only (no ids)
    GET  /stats                 CPU seconds, RSS, runs, live message objects

A client that disconnects cancels its run (the run's task is cancelled), as the Agent Server
does; LangGraph may still be flushing that run's saves.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import resource
import sys
import uuid
from collections import defaultdict
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.types import Command, interrupt
from opentelemetry import trace
from psycopg_pool import AsyncConnectionPool
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

ORDER_RECORD = 2_000
"""Characters of an order record (what the CRM returns)."""
DISCONNECT_POLL = 0.02
"""Seconds between checks whether the client is still there while its run goes on."""


class DeskModel(BaseChatModel):
    """A scripted model that answers from the conversation like a hosted one would: asked for
    a refund it looks the order up and issues the refund (both calls at once, new call ids on
    every call); asked for a status it looks the order up; with the tools' answers in, it
    replies."""

    @property
    def _llm_type(self) -> str:
        return "desk"

    def bind_tools(self, tools: Any, **kwargs: Any) -> DeskModel:  # type: ignore[override]
        return self

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        last_human = max(i for i, m in enumerate(messages) if m.type == "human")
        text = str(messages[last_human].content)
        order = text.rsplit(" ", 1)[-1]
        answered = [m for m in messages[last_human:] if m.type == "tool"]
        if answered:
            reply = AIMessage(f"Done: {', '.join(str(m.content)[:40] for m in answered)}")
        else:
            calls = [_call("lookup_order", {"order": order})]
            if text.startswith("refund"):
                calls.append(_call("issue_refund", {"order": order, "amount_cents": 1250}))
            reply = AIMessage("", tool_calls=calls)
        return ChatResult(generations=[ChatGeneration(message=reply)])


def _call(name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "args": args, "id": f"call_{uuid.uuid4().hex[:12]}", "type": "tool_call"}


tracer = trace.get_tracer("support-desk")


@tool
async def lookup_order(order: str) -> str:
    """Look an order up in the CRM (read-only)."""
    with tracer.start_as_current_span("crm.lookup_order"):
        await asyncio.sleep(0.002)
        return f"order {order}: ".ljust(ORDER_RECORD, "#")


@tool
async def issue_refund(order: str, amount_cents: int) -> str:
    """Refund an order (a side effect); a human approves it first."""
    decision = interrupt({"approve_refund": order, "amount_cents": amount_cents})
    with tracer.start_as_current_span("payments.refund"):
        await asyncio.sleep(0.002)
        return f"refunded {amount_cents} on {order} ({decision})"


SAVE_LATENCY = float(os.environ.get("DESK_SAVE_LATENCY_MS", "0")) / 1000
"""Seconds added to each checkpoint save: the round trips to a database in another zone."""


class RemotePostgresSaver(AsyncPostgresSaver):
    """`AsyncPostgresSaver` whose saves take `SAVE_LATENCY` longer, as over a real network."""

    async def aput(self, *args: Any, **kwargs: Any) -> Any:
        if SAVE_LATENCY:
            await asyncio.sleep(SAVE_LATENCY)
        return await super().aput(*args, **kwargs)


def build_agent(saver: Any) -> Any:
    import warnings

    from langgraph.prebuilt import create_react_agent

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return create_react_agent(DeskModel(), [lookup_order, issue_refund], checkpointer=saver)


class Desk:
    """The service's state: its agent and its counters."""

    def __init__(self, mode: str, database_url: str, spans_file: str | None) -> None:
        self.mode = mode
        self.database_url = database_url
        self.spans_file = spans_file
        self.runs = 0
        self.cancelled = 0
        self.graph: Any = None
        self.provider: Any = None
        self.locks: defaultdict[str, asyncio.Lock] = defaultdict(asyncio.Lock)
        """One run at a time per thread (a retry waits for the run it replaces to be
        cancelled), as the Agent Server's `enqueue` strategy: two runs of one thread at once
        would race for its latest checkpoint."""

    @asynccontextmanager
    async def lifespan(self, app: Starlette) -> AsyncIterator[None]:
        self.provider = self._telemetry()
        async with AsyncConnectionPool(
            self.database_url,
            max_size=16,
            kwargs={"autocommit": True, "prepare_threshold": 0},
            open=False,
        ) as pool:
            saver: Any = RemotePostgresSaver(pool)  # type: ignore[arg-type]
            await saver.setup()
            if self.mode == "ours":
                from langgraph.checkpoint.otel import instrument

                saver = instrument(saver)
            self.graph = build_agent(saver)
            yield
        if self.provider is not None:
            self.provider.shutdown()

    def _telemetry(self) -> Any:
        if self.mode == "bare":
            return None
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        from langgraph.checkpoint.otel.export.otlp_json import OtlpJsonSpanExporter

        provider = TracerProvider(resource=Resource.create({"service.name": "support-desk"}))
        if self.spans_file:
            provider.add_span_processor(BatchSpanProcessor(OtlpJsonSpanExporter(self.spans_file)))
        trace.set_tracer_provider(provider)
        if self.mode == "genai":
            from opentelemetry.instrumentation.genai.langchain import LangChainInstrumentor

            LangChainInstrumentor().instrument(tracer_provider=provider)
        return provider

    async def run(self, request: Request, graph_input: Any, config: dict[str, Any]) -> None:
        """Run the agent; cancel the run if the client goes away meanwhile."""
        self.runs += 1
        task = asyncio.ensure_future(self.graph.ainvoke(graph_input, config))
        while True:
            done, _ = await asyncio.wait({task}, timeout=DISCONNECT_POLL)
            if done:
                task.result()
                return
            if await request.is_disconnected():
                self.cancelled += 1
                task.cancel()
                with suppress(asyncio.CancelledError):
                    await task
                return

    async def say(self, request: Request) -> JSONResponse:
        thread_id = request.path_params["thread_id"]
        body = await request.json()
        async with self.locks[thread_id]:
            return await self._say(request, thread_id, body)

    async def _say(self, request: Request, thread_id: str, body: dict[str, Any]) -> JSONResponse:
        config = {"configurable": {"thread_id": thread_id}}
        state = await self.graph.aget_state(config)
        humans = [m for m in state.values.get("messages", []) if m.type == "human"]
        if len(humans) <= body["turn"]:
            await self.run(request, {"messages": [HumanMessage(body["text"])]}, config)
        elif state.tasks and not state.interrupts:
            await self.run(request, None, config)  # a cancelled or killed run goes on
        return await self.reply(config)

    async def approve(self, request: Request) -> JSONResponse:
        thread_id = request.path_params["thread_id"]
        config = {"configurable": {"thread_id": thread_id}}
        async with self.locks[thread_id]:
            state = await self.graph.aget_state(config)
            if state.interrupts:
                await self.run(request, Command(resume="approved"), config)
            elif state.tasks:
                await self.run(request, None, config)
            return await self.reply(config)

    async def reply(self, config: dict[str, Any]) -> JSONResponse:
        state = await self.graph.aget_state(config)
        # `tasks`, not `next`: a task whose writes were saved before its run stopped is left
        # out of `next`, and new input would drop those writes
        status = "interrupted" if state.interrupts else ("running" if state.tasks else "done")
        checkpoint_id = (state.config.get("configurable") or {}).get("checkpoint_id")
        return JSONResponse({"status": status, "checkpoint_id": checkpoint_id})

    async def thread(self, request: Request) -> JSONResponse:
        config = {"configurable": {"thread_id": request.path_params["thread_id"]}}
        state = await self.graph.aget_state(config)
        return JSONResponse([_content(m) for m in state.values.get("messages", [])])

    async def stats(self, request: Request) -> JSONResponse:
        gc.collect()
        usage = resource.getrusage(resource.RUSAGE_SELF)
        with open("/proc/self/statm") as statm:
            rss = int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        return JSONResponse(
            {
                "cpu_seconds": usage.ru_utime + usage.ru_stime,
                "rss_bytes": rss,
                "runs": self.runs,
                "cancelled": self.cancelled,
                "live_messages": sum(1 for o in gc.get_objects() if isinstance(o, BaseMessage)),
            }
        )


def _content(message: BaseMessage) -> list[Any]:
    """What a message says, without the ids that change on every run."""
    calls = (
        [[c["name"], json.dumps(c["args"], sort_keys=True)] for c in message.tool_calls]
        if (isinstance(message, AIMessage))
        else []
    )
    return [message.type, str(message.content), getattr(message, "name", None), calls]


def app(mode: str, database_url: str, spans_file: str | None) -> Starlette:
    desk = Desk(mode, database_url, spans_file)
    return Starlette(
        routes=[
            Route("/threads/{thread_id}/say", desk.say, methods=["POST"]),
            Route("/threads/{thread_id}/approve", desk.approve, methods=["POST"]),
            Route("/threads/{thread_id}", desk.thread),
            Route("/stats", desk.stats),
        ],
        lifespan=desk.lifespan,
    )


def main() -> None:
    import uvicorn

    mode, database_url, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
    spans_file = sys.argv[4] if len(sys.argv) > 4 else None
    uvicorn.run(
        app(mode, database_url, spans_file),
        host="127.0.0.1",
        port=port,
        log_level="warning",
        access_log=False,
    )


if __name__ == "__main__":
    main()
