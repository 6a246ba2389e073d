"""Python environments holding exactly a chosen set of the LangChain peer instrumentations, as a
user's environment would, built in seconds from the project's ``.venv``.

``opentelemetry-instrument`` loads every installed ``opentelemetry_instrumentor`` entry point,
and ``OTEL_PYTHON_DISABLED_INSTRUMENTATIONS`` disables by entry-point name only: the official
GenAI LangChain instrumentation, OpenInference's and Traceloop's all register ``langchain``. So
a cell with "GenAI and OpenInference but not Traceloop" needs an environment where exactly
those are installed.

`build_env` makes one: ``python -m venv --without-pip`` from the interpreter of ``.venv``, whose
site-packages is a tree of symlinks into ``.venv``'s site-packages (and, for Traceloop, into
``.venv-traceloop/``, installed by scripts/tools/traceloop.sh) minus the files (per the
``RECORD`` of each ``.dist-info``) of the excluded distributions. A distribution is excluded
with the dependencies that only it needs (OpenInference's ``openinference-instrumentation`` and
semantic conventions, GenAI's ``opentelemetry-util-genai``), found from the requirements of
what stays. Directories shared by several distributions (the ``opentelemetry`` and
``opentelemetry.instrumentation`` namespace packages) are real directories whose entries are
linked one by one; everything else is one link. The ``.pth`` files (the project's editable
install) come along as links; console scripts of ``.venv/bin`` are rewritten with the new
interpreter in their shebang, as pip would write them.

`Env.check()` runs the new interpreter and returns what it really sees: ``sys.prefix``, the
``opentelemetry_instrumentor`` entry points and the distributions they come from.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from importlib.metadata import Distribution, PathDistribution
from pathlib import Path

from packaging.requirements import Requirement

from suite_paths import REPO as ROOT

VENV = ROOT / ".venv"
SITE = VENV / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
TRACELOOP_DIR = ROOT / ".venv-traceloop"
"""``pip install --target`` folder of Traceloop's LangChain instrumentation
(scripts/tools/traceloop.sh)."""

PEERS: dict[str, str] = {
    "genai": "opentelemetry-instrumentation-genai-langchain",
    "openinference": "openinference-instrumentation-langchain",
    "traceloop": "opentelemetry-instrumentation-langchain",
    "openlit": "openlit",
}
"""Peer -> its distribution. The first three register the entry point ``langchain``; OpenLIT
registers none (an app starts it with ``openlit.init()``)."""
ENTRY_POINT_GROUP = "opentelemetry_instrumentor"
PROJECT = "langgraph-checkpoint-otel"


class PeerEnvUnavailable(RuntimeError):
    """A distribution the environment should hold is not installed (run ``make tools``)."""


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _distributions(folder: Path) -> dict[str, PathDistribution]:
    found: dict[str, PathDistribution] = {}
    for info in sorted(folder.glob("*.dist-info")):
        dist = PathDistribution(info)
        name = dist.metadata["Name"]
        if name:
            found[_norm(name)] = dist
    return found


def _requirements(dist: Distribution, extras: Iterable[str] = ("",)) -> set[str]:
    names: set[str] = set()
    for raw in dist.requires or []:
        req = Requirement(raw)
        if req.marker is None or any(req.marker.evaluate({"extra": e}) for e in extras):
            names.add(_norm(req.name))
    return names


def _project_roots(available: dict[str, PathDistribution]) -> set[str]:
    """What the project's ``[dev]`` environment asks for by name, minus the peer stack (its
    ``bench`` extra pins the peers and their helpers): kept even when no peer needs it (the OTLP
    exporter, the distro)."""
    project = available.get(_norm(PROJECT))
    if project is None:
        return set()
    stack = _requirements(project, ("bench",)) - _requirements(project)
    return _requirements(project, ("", "dev", "otlp")) - stack


def excluded_distributions(available: dict[str, PathDistribution], peers: set[str]) -> set[str]:
    """The distributions to leave out: every peer not in `peers`, and each dependency of theirs
    that neither a remaining distribution nor the project's environment requires (repeated until
    nothing more falls out)."""
    out = {_norm(PEERS[p]) for p in PEERS if p not in peers} & set(available)
    roots = _project_roots(available)
    while True:
        kept = set(available) - out
        needed = roots.union(*(_requirements(available[k]) for k in kept))
        orphans = {
            dep
            for gone in out
            for dep in _requirements(available[gone])
            if dep in available and dep not in needed and dep not in out
        }
        if not orphans:
            return out
        out |= orphans


def _owned_files(dist: PathDistribution, folder: Path) -> set[Path]:
    """Paths (relative to `folder`) a distribution installed there, from its RECORD, with its
    ``.dist-info`` folder."""
    info = Path(str(dist._path))
    owned = {info.relative_to(folder)}
    for file in dist.files or []:
        path = Path(os.path.normpath(folder / str(file)))
        if folder in path.parents:
            owned.add(path.relative_to(folder))
    return owned


def _link_tree(sources: list[Path], site: Path, hidden: set[Path], rel: Path) -> None:
    """Link the union of every ``source/rel`` into ``site/rel``, leaving out `hidden` paths."""
    hidden_dirs = {parent for path in hidden for parent in path.parents}
    here = [src for src in sources if (src / rel).is_dir()]
    for name in sorted({child.name for src in here for child in (src / rel).iterdir()}):
        sub = rel / name
        if sub in hidden or name == "__pycache__":
            continue
        holders = [src for src in here if (src / sub).exists()]
        dirs = [src for src in holders if (src / sub).is_dir()]
        if not dirs or (len(holders) == 1 and sub not in hidden_dirs):
            (site / sub).symlink_to(holders[0] / sub)  # a file in several: the first, as sys.path
            continue
        (site / sub).mkdir()
        _link_tree(dirs, site, hidden, sub)
        if not any((site / sub).iterdir()):
            (site / sub).rmdir()  # only hidden files: an empty folder would import as a package


@dataclass(frozen=True)
class Env:
    """One built environment."""

    root: Path
    peers: frozenset[str]
    excluded: frozenset[str]

    @property
    def python(self) -> Path:
        return self.root / "bin" / "python"

    @property
    def bin(self) -> Path:
        return self.root / "bin"

    def environ(self, base: dict[str, str]) -> dict[str, str]:
        """`base` with this environment activated (``PATH``, ``VIRTUAL_ENV``), as a user's shell
        after ``source bin/activate``."""
        env = dict(base)
        env.pop("PYTHONHOME", None)
        env.pop("PYTHONPATH", None)
        env["VIRTUAL_ENV"] = str(self.root)
        env["PATH"] = f"{self.bin}{os.pathsep}{base.get('PATH', '')}"
        return env

    def check(self) -> dict[str, object]:
        """What the environment's interpreter sees: prefix, executable, and the
        ``opentelemetry_instrumentor`` entry points as ``name=distribution``."""
        code = (
            "import json, sys\n"
            "from importlib.metadata import entry_points\n"
            f"eps = entry_points(group={ENTRY_POINT_GROUP!r})\n"
            "print(json.dumps({'prefix': sys.prefix, 'executable': sys.executable,\n"
            "  'entry_points': sorted(f'{e.name}={e.dist.name}' for e in eps)}))\n"
        )
        out = subprocess.run(
            [str(self.python), "-c", code],
            env=self.environ(dict(os.environ)),
            capture_output=True,
            text=True,
            check=True,
        )
        return dict(json.loads(out.stdout))


def require_traceloop() -> None:
    """Raise `PeerEnvUnavailable` unless ``.venv-traceloop/`` holds Traceloop's instrumentation."""
    found = _distributions(TRACELOOP_DIR) if TRACELOOP_DIR.is_dir() else {}
    if _norm(PEERS["traceloop"]) not in found:
        raise PeerEnvUnavailable(
            f"Traceloop's LangChain instrumentation is not in {TRACELOOP_DIR} "
            "(run scripts/tools/traceloop.sh, or make tools)"
        )


def build_env(
    parent: Path, peers: Iterable[str], name: str | None = None, library_src: Path | None = None
) -> Env:
    """An environment under `parent` holding exactly the peer distributions `peers` (see the
    module docstring). `library_src`: import the library from this ``src`` folder instead of
    the checkout's (its editable ``.pth`` is rewritten), e.g. a ``git archive`` of a commit."""
    chosen = set(peers)
    unknown = chosen - set(PEERS)
    if unknown:
        raise ValueError(f"unknown peers {sorted(unknown)}; known: {sorted(PEERS)}")
    sources = [SITE]
    available = _distributions(SITE)
    if "traceloop" in chosen:
        require_traceloop()
        sources.append(TRACELOOP_DIR)
        available.update(_distributions(TRACELOOP_DIR))
    for peer in chosen:
        if _norm(PEERS[peer]) not in available:
            raise PeerEnvUnavailable(f"{PEERS[peer]} is not installed in {SITE}")
    excluded = excluded_distributions(available, chosen)
    hidden: set[Path] = set()
    for dist_name in excluded:
        dist = available[dist_name]
        folder = Path(str(dist._path)).parent
        hidden |= _owned_files(dist, folder)

    root = parent / (name or ("peers-" + ("-".join(sorted(chosen)) or "none")))
    subprocess.run(
        [str(VENV / "bin" / "python"), "-m", "venv", "--without-pip", str(root)],
        check=True,
        capture_output=True,
    )
    site = root / "lib" / SITE.parent.name / "site-packages"
    shutil.rmtree(site)
    site.mkdir()
    _link_tree(sources, site, hidden, Path())
    _write_scripts(root)
    if library_src is not None:
        for pth in site.glob("_editable_impl_*.pth"):
            pth.unlink()
            pth.write_text(f"{library_src}\n")
    return Env(root, frozenset(chosen), frozenset(excluded))


def _write_scripts(root: Path) -> None:
    """Console scripts of ``.venv/bin`` that run ``.venv``'s interpreter, rewritten for the new
    one (scripts of excluded distributions fail at import, as they would not exist)."""
    shebang = f"#!{VENV / 'bin' / 'python'}"
    for script in sorted((VENV / "bin").iterdir()):
        target = root / "bin" / script.name
        if target.exists() or not script.is_file() or script.is_symlink():
            continue
        try:
            text = script.read_text()
        except UnicodeDecodeError:
            continue
        first, _, rest = text.partition("\n")
        if first.strip() != shebang:
            continue
        target.write_text(f"#!{root / 'bin' / 'python'}\n{rest}")
        target.chmod(0o755)
