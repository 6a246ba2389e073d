"""The support desk of tests/apps/support_desk.py for the Agent Server (``./desk.py:support_desk``):
`create_supervisor` over two `create_react_agent` workers, with a refund tool that asks for
approval with ``interrupt()``. Not compiled with a checkpointer (the server attaches its own).
Found through ``AGENT_APP_APPS_DIR`` like ``graph.py``'s agents."""

from __future__ import annotations

import os
import sys
from pathlib import Path

_APPS = os.environ.get("AGENT_APP_APPS_DIR") or str(Path(__file__).resolve().parent.parent)
if _APPS not in sys.path:
    sys.path.insert(0, _APPS)

import support_desk as _desk  # noqa: E402

support_desk = _desk.build()
