"""Does the agent survive a crash or an interrupt at any point of its run?

`resume_checker` runs the agent once for a reference, then once per superstep and mode: a
failure raised in the node of that step (or a static interrupt before it), a resume from the
checkpoint, and a comparison with the reference: same final state, same nodes and tool calls
step by step, no tool call answered twice. A failure names the step, the node and the first
divergence.
"""

from __future__ import annotations

from agent import QUESTION, build_agent

from langgraph.checkpoint.otel.testing import ResumeChecker


def test_agent_resumes_at_every_step(resume_checker: ResumeChecker) -> None:
    report = resume_checker(build_agent, QUESTION)

    # agent -> tools -> agent -> tools -> agent: five supersteps, each checked in both modes
    assert [step.nodes for step in report.reference_steps] == [
        ("agent",),
        ("tools",),
        ("agent",),
        ("tools",),
        ("agent",),
    ]
    assert report.reference_tool_calls == ("search_flights", "check_calendar")
    assert len(report.results) == 10


async def test_agent_resumes_at_every_step_async(resume_checker: ResumeChecker) -> None:
    await resume_checker.acheck(build_agent, QUESTION, modes=["error"])
