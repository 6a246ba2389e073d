"""The package's layers, bottom to top: the base modules (`names`, `options`, `bounded`,
`migrations`) beside `_langgraph` (every LangGraph internal and string format), `analysis` (pure
logic), `core` (the wrapper), `tools` (inspector, harness, OTLP files) built on it, the public
face of the package root (which re-exports, lazily, what users call from every layer), and
`__main__` (the inspector's launcher). No module imports a layer above its own."""

from __future__ import annotations

import ast
from pathlib import Path

import langgraph.checkpoint.otel

PACKAGE = "langgraph.checkpoint.otel"
ROOT = Path(langgraph.checkpoint.otel.__file__).parent
RANK = {"base": 0, "_langgraph": 0, "analysis": 1, "core": 2, "tools": 3, "facade": 4, "main": 5}


def layer_of_module(relative: Path) -> str:
    if len(relative.parts) > 1:
        return relative.parts[0]
    return {"__init__": "facade", "__main__": "main"}.get(relative.stem, "base")


def layer_of_import(name: str) -> str | None:
    if name == PACKAGE:
        return "facade"
    if not name.startswith(PACKAGE + "."):
        return None
    first = name[len(PACKAGE) + 1 :].split(".")[0]
    return first if first in RANK else "base"


def internal_imports(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module == PACKAGE:
            # `from langgraph.checkpoint.otel import names, instrument`: modules or the facade
            found += [
                f"{PACKAGE}.{a.name}" if (ROOT / f"{a.name}.py").exists() else PACKAGE
                for a in node.names
            ]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append(node.module)
    return [n for n in found if n == PACKAGE or n.startswith(PACKAGE + ".")]


def test_no_import_runs_upward() -> None:
    upward = []
    for path in sorted(ROOT.rglob("*.py")):
        relative = path.relative_to(ROOT)
        own = layer_of_module(relative)
        for name in internal_imports(path):
            target = layer_of_import(name)
            assert target is not None
            if RANK[target] > RANK[own]:
                upward.append(f"{relative} ({own}) imports {name} ({target})")
    assert upward == []


def test_every_module_is_in_a_layer() -> None:
    top = {p.name for p in ROOT.iterdir() if not p.name.startswith((".", "__pycache__"))}
    assert top == {
        "__init__.py",
        "__main__.py",
        "names.py",
        "options.py",
        "migrations.py",
        "bounded.py",
        "py.typed",
        "_langgraph",
        "analysis",
        "core",
        "tools",
    }
    for layer in ("_langgraph", "analysis", "core", "tools"):
        assert (ROOT / layer / "__init__.py").read_text().startswith('"""')


def test_every_public_name_of_the_root_resolves_and_is_listed() -> None:
    import langgraph.checkpoint.otel as root

    assert sorted(root.__all__) == sorted(root._EXPORTS)
    for name in root.__all__:
        assert getattr(root, name) is not None, name


def test_the_inspector_loads_without_the_wrapper() -> None:
    """A process that only reads checkpoints pays for neither the wrapper nor LangGraph's graph
    modules (`langgraph.types`): the inspector's start-up time."""
    import subprocess
    import sys

    probe = (
        "import sys, langgraph.checkpoint.otel.tools.inspector.cli\n"
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
    import subprocess
    import sys

    heavy = (
        "langgraph.checkpoint.otel.tools.testing",
        "langgraph.checkpoint.otel.core.saver",
        "langgraph.graph",
        "langgraph.pregel",
        "langchain_core",
        "opentelemetry.sdk",
        "pydantic",
    )
    probe = (
        "import sys, langgraph.checkpoint.otel.tools.pytest_plugin\n"
        f"print(sorted(m for m in {heavy!r} if m in sys.modules))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert loaded == "[]"


REPO = Path(__file__).resolve().parents[1]
DOCUMENTED = [
    REPO / "README.md",
    *sorted((REPO / "docs").glob("*.md")),
    *sorted((REPO / "examples").glob("*.py")),
]


def test_the_docs_and_examples_import_only_the_public_face() -> None:
    """What README, docs and examples tell users to import is importable from the package root
    (or is the `names` contract): nothing they show reaches into an internal module."""
    import re

    import langgraph.checkpoint.otel as root

    internal, unknown = [], []
    for path in DOCUMENTED:
        text = path.read_text()
        for module in re.findall(r"from (langgraph\.checkpoint\.otel\.[\w.]+) import", text):
            if module != f"{PACKAGE}.names":
                internal.append(f"{path.name}: {module}")
        for grouped, single in re.findall(
            r"from langgraph\.checkpoint\.otel import (?:\(([^)]*)\)|([\w ,]+))", text
        ):
            imported = grouped or single
            for name in (n.strip() for n in imported.split(",")):
                if name and name != "names" and name not in root.__all__:
                    unknown.append(f"{path.name}: {name}")
    assert internal == [] and unknown == []
