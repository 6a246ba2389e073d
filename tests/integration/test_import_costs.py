"""What a fresh interpreter loads: the inspector without the wrapper, the pytest plugin without
anything heavy, the package without the span-file exporter or the SDK's exporters. Each probe
runs in a new process (`sys.executable -c`): what this process has imported cannot be undone.
(Moved from tests/unit/test_layout.py and tests/unit/test_otlp_json.py, which stay pure.)"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import langgraph.checkpoint.otel


def test_the_inspector_loads_without_the_wrapper() -> None:
    """A process that only reads checkpoints pays for neither the wrapper nor LangGraph's graph
    modules (`langgraph.types`): the inspector's start-up time."""
    probe = (
        "import sys, langgraph.checkpoint.otel.inspector.cli\n"
        "print(sorted(m for m in ('langgraph.checkpoint.otel.core.wrapping', "
        "'langgraph.checkpoint.otel.core.saver', 'langgraph.types', 'langgraph.pregel') "
        "if m in sys.modules))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert loaded == "[]"


def test_the_pytest_plugin_imports_nothing_heavy() -> None:
    """pytest loads the plugin in every project that installs the package: it must not import
    LangGraph, LangChain, the SDK, the wrapper or the harness until a test uses the fixture."""
    heavy = (
        "langgraph.checkpoint.otel.testing.harness",
        "langgraph.checkpoint.otel.core.saver",
        "langgraph.graph",
        "langgraph.pregel",
        "langchain_core",
        "opentelemetry.sdk",
        "pydantic",
    )
    probe = (
        "import sys, langgraph.checkpoint.otel.testing.pytest_plugin\n"
        f"print(sorted(m for m in {heavy!r} if m in sys.modules))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert loaded == "[]"


def test_core_library_does_not_import_this_module() -> None:
    """The SDK and exporters are the optional `otlp` extra: only the tools use them (the root
    re-exports otlp_json's names lazily, importing it on first use).

    (langchain-core's langsmith may import parts of the SDK on its own; that is not ours.)
    """
    code = (
        "import sys, langgraph.checkpoint.otel\n"
        "print([m for m in sys.modules if m == 'langgraph.checkpoint.otel.export.otlp_json'\n"
        "       or m.startswith(('opentelemetry.exporter', 'google.protobuf.json_format'))])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"

    package = Path(langgraph.checkpoint.otel.__file__).parent
    offenders = []
    for module in sorted(package.rglob("*.py")):
        if module.relative_to(package).parts[0] in (
            "testing",
            "export",
            "inspector",
            "retention",
            "__main__.py",
        ):
            continue  # the packages built on the wrapper (harness, OTLP JSON files, inspector,
            # retention)
            # may use the SDK
        tree = ast.parse(module.read_text())
        typing_only = {  # `if TYPE_CHECKING:` imports (the root's lazy re-exports) never run
            id(inner)
            for node in ast.walk(tree)
            if isinstance(node, ast.If)
            and isinstance(node.test, ast.Name)
            and node.test.id == "TYPE_CHECKING"
            for inner in ast.walk(node)
        }
        for node in ast.walk(tree):
            if id(node) in typing_only:
                continue
            imported: list[str] = []
            if isinstance(node, ast.Import):
                imported = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                imported = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            offenders += [
                f"{module.name}: {name}"
                for name in imported
                if name.startswith(("opentelemetry.sdk", "opentelemetry.exporter"))
                or name.startswith(
                    tuple(
                        f"langgraph.checkpoint.otel.{p}" for p in ("testing", "export", "inspector")
                    )
                )
            ]
    assert offenders == []
