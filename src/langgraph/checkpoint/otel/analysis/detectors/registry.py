"""Every detector, in the order they judge a step: departures first (after one, the branches
no longer align and the step's state is not compared), then the state, then the side effects.
A new kind of finding is one module and one entry here (and its name in `options.DETECTORS`)."""

from __future__ import annotations

from langgraph.checkpoint.otel.analysis.detectors.concurrent_write import ConcurrentWrite
from langgraph.checkpoint.otel.analysis.detectors.duplicate_tool_call import DuplicateToolCall
from langgraph.checkpoint.otel.analysis.detectors.finding import Detector
from langgraph.checkpoint.otel.analysis.detectors.repeated_side_effect import (
    RepeatedSideEffect,
)
from langgraph.checkpoint.otel.analysis.detectors.state import State
from langgraph.checkpoint.otel.analysis.detectors.tool_arguments import ToolArguments
from langgraph.checkpoint.otel.analysis.detectors.trajectory import Trajectory

REGISTRY: tuple[Detector, ...] = (
    Trajectory(),
    ToolArguments(),
    State(),
    DuplicateToolCall(),
    RepeatedSideEffect(),
    ConcurrentWrite(),
)
