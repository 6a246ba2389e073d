"""What the built distributions carry: the wheel only the package, the sdist only what a user
needs (no node_modules of the Grafana type check, no venvs, no other projects' tests).

Builds offline (``--no-isolation``) from the working tree, with `build` if installed, else with
hatchling's builders directly.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from suite_paths import REPO as ROOT

PACKAGE = "langgraph/checkpoint/otel"
MAX_SDIST_BYTES = 2 * 1024 * 1024


def _build(out: Path) -> tuple[Path, Path]:
    if importlib.util.find_spec("build") is not None:
        subprocess.run(
            [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(ROOT)],
            check=True,
            capture_output=True,
            text=True,
        )
    else:
        pytest.importorskip("hatchling", reason="neither build nor hatchling is installed")
        from hatchling.builders.sdist import SdistBuilder
        from hatchling.builders.wheel import WheelBuilder

        for builder in (SdistBuilder, WheelBuilder):
            list(builder(str(ROOT)).build(directory=str(out), versions=["standard"]))
    (sdist,) = out.glob("*.tar.gz")
    (wheel,) = out.glob("*.whl")
    return sdist, wheel


@pytest.fixture(scope="module")
def dists(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return _build(tmp_path_factory.mktemp("dist"))


@pytest.fixture(scope="module")
def sdist_files(dists: tuple[Path, Path]) -> list[str]:
    with tarfile.open(dists[0]) as tar:
        names = tar.getnames()
    # strip the top-level "<name>-<version>/" directory
    return [n.split("/", 1)[1] for n in names if "/" in n]


@pytest.fixture(scope="module")
def wheel_files(dists: tuple[Path, Path]) -> list[str]:
    with zipfile.ZipFile(dists[1]) as whl:
        return whl.namelist()


def test_the_wheel_carries_the_package_and_its_entry_points(
    wheel_files: list[str], dists: tuple[Path, Path]
) -> None:
    package = ROOT / "src" / PACKAGE
    modules = sorted(str(p.relative_to(package)) for p in package.rglob("*.py"))
    assert modules and all(f"{PACKAGE}/{m}" in wheel_files for m in modules)
    assert f"{PACKAGE}/inspector/templates/report.html.j2" in wheel_files
    assert f"{PACKAGE}/py.typed" in wheel_files
    assert not [f for f in wheel_files if f.startswith("tests/") or "/tests/" in f]
    top = {f.split("/", 1)[0] for f in wheel_files}
    assert {t for t in top if not t.endswith(".dist-info")} == {"langgraph"}
    (entry_points,) = [f for f in wheel_files if f.endswith(".dist-info/entry_points.txt")]
    with zipfile.ZipFile(dists[1]) as whl:
        text = whl.read(entry_points).decode()
    assert "[opentelemetry_instrumentor]" in text
    assert "langgraph_checkpoint = langgraph.checkpoint.otel.core.instrumentor:" in text
    assert "[pytest11]" in text and "langgraph.checkpoint.otel.testing.pytest_plugin" in text
    assert "langgraph-otel = langgraph.checkpoint.otel.inspector.cli:console_script" in text
    assert any(f.endswith(".dist-info/licenses/LICENSE") for f in wheel_files)


def test_the_sdist_carries_only_what_a_user_needs(
    sdist_files: list[str], dists: tuple[Path, Path]
) -> None:
    for needed in ("LICENSE", "README.md", "CHANGELOG.md", "pyproject.toml", "PKG-INFO"):
        assert needed in sdist_files
    assert f"src/{PACKAGE}/__init__.py" in sdist_files
    assert f"src/{PACKAGE}/py.typed" in sdist_files
    assert "docs/telemetry.md" in sdist_files
    for unwanted in ("node_modules", ".venv", ".langgraph-suite", ".bench", ".demo", "__pycache__"):
        assert not [f for f in sdist_files if unwanted in f.split("/")], unwanted
    assert not [f for f in sdist_files if "cache" in f.split("/", 1)[0]]  # .mypy_cache, ...
    assert not [f for f in sdist_files if f.startswith("tests/") or "/tests/" in f]
    assert dists[0].stat().st_size < MAX_SDIST_BYTES


def test_the_license_is_mit() -> None:
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("MIT License")
    assert "Copyright (c) 2026 the langgraph-checkpoint-otel authors" in text


def test_the_wheel_carries_no_demo(wheel_files: list[str]) -> None:
    """The demo and its agent live in examples/ (`make demo`), not in what users install."""
    assert not [f for f in wheel_files if "demo" in f.rsplit("/", 1)[-1]]
    assert f"{PACKAGE}/testing/pytest_plugin.py" in wheel_files


def test_the_oldest_environment_pins_the_declared_lower_bounds() -> None:
    """`.venv-lg-oldest` (scripts/langgraph_versions/oldest.txt) tests exactly the lower bounds
    pyproject.toml declares, and README states the LangGraph floor."""
    import re
    import tomllib

    from packaging.requirements import Requirement
    from packaging.version import Version

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"].values()
    declared = [*project["dependencies"], *(line for extra in extras for line in extra)]
    floors: dict[str, Version] = {}
    for line in declared:
        requirement = Requirement(line)
        for spec in requirement.specifier:
            if spec.operator == ">=":
                floors[requirement.name] = Version(spec.version)
    pins = {
        name: Version(version)
        for name, version in re.findall(
            r"^([\w.-]+)==([\w.]+)$",
            (ROOT / "scripts" / "langgraph_versions" / "oldest.txt").read_text(),
            re.M,
        )
    }
    checked = {name: (pins[name], floors[name]) for name in pins if name in floors}
    assert {"langgraph", "langgraph-checkpoint", "langchain-core"} <= set(checked)
    assert {name: pin for name, (pin, floor) in checked.items() if pin != floor} == {}
    assert f"LangGraph {pins['langgraph']} or later" in (ROOT / "README.md").read_text()
