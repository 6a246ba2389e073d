"""Where the suite's folders are: the repository, the apps tests run as processes or import
(``tests/apps``) and the helpers (``tests/support``).

tests/conftest.py puts ``APPS`` and ``SUPPORT`` on ``sys.path`` for the test session; a child
process that imports them gets them through `pythonpath`.
"""

from __future__ import annotations

import os
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
REPO = TESTS.parent
APPS = TESTS / "apps"
SUPPORT = TESTS / "support"


def pythonpath(inherited: str | None = None) -> str:
    """``PYTHONPATH`` for a child process that imports the apps and the helpers: both folders,
    then `inherited` (by default the caller's own ``PYTHONPATH``)."""
    rest = os.environ.get("PYTHONPATH") if inherited is None else inherited
    return os.pathsep.join(filter(None, [str(APPS), str(SUPPORT), rest]))
