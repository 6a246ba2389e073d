"""Headless Chromium driven over the DevTools protocol, for single-page apps that need a little
set-up before their first render (``tests/integration/test_mlflow.py``).

``chromium --dump-dom --screenshot`` (tests/integration/test_report_browser.py) cannot set anything up
before the page runs. MLflow's UI, loaded from 127.0.0.1 by a fresh profile, opens its
assistant panel and a "Detect issues" pop-over over a quarter of the page; each stays closed
once a localStorage flag says it was shown. `Browser.load` adds a script that sets such keys
before the page's own scripts, waits until the page's text holds every
expected string, can click an element by its text, then `Browser.capture` returns the PNG,
the DOM after the scripts ran, the visible text and the console errors.

The protocol goes over the ``websockets`` client (in .venv through langgraph-cli's
langgraph-api); the Chromium binary is Debian's (``scripts/tools/chromium.sh``).
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
import re
import subprocess
import tempfile
import threading
import time
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from websockets.sync.client import ClientConnection, connect

_LISTENING = re.compile(r"DevTools listening on (ws://\S+)")


@dataclass
class Shot:
    """What a page showed once its expected text was there."""

    png: bytes
    dom: str
    """``document.documentElement.outerHTML`` after the page's scripts ran."""
    text: str
    """``document.body.innerText``: the text a reader sees."""
    errors: list[str] = field(default_factory=list)
    """Console errors and uncaught exceptions the page produced."""


class Browser:
    """One headless Chromium (fresh profile) with one page, used as a context manager."""

    def __init__(self, binary: str, window: tuple[int, int] = (1600, 1000)) -> None:
        self.binary = binary
        self.window = window
        self.profile = tempfile.TemporaryDirectory(prefix="chromium-cdp-")
        self.proc: subprocess.Popen[str] | None = None
        self.ws: ClientConnection | None = None
        self._ids = itertools.count(1)
        self._events: list[dict[str, Any]] = []
        self._closing = contextlib.ExitStack()

    def __enter__(self) -> Browser:
        self.proc = subprocess.Popen(
            [
                self.binary,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-extensions",
                "--no-first-run",
                "--hide-scrollbars",
                "--remote-debugging-port=0",
                "--remote-allow-origins=*",
                f"--user-data-dir={self.profile.name}",
                f"--window-size={self.window[0]},{self.window[1]}",
                "about:blank",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            browser_ws = self._wait_for_endpoint()
            http = browser_ws.split("/devtools/")[0].replace("ws://", "http://")
            with urllib.request.urlopen(f"{http}/json/list", timeout=10) as response:
                pages = [t for t in json.loads(response.read()) if t.get("type") == "page"]
            self.ws = self._closing.enter_context(
                connect(pages[0]["webSocketDebuggerUrl"], max_size=None, open_timeout=10)
            )
            for method in ("Page.enable", "Runtime.enable", "Log.enable"):
                self.send(method)
            self.send(
                "Emulation.setDeviceMetricsOverride",
                width=self.window[0],
                height=self.window[1],
                deviceScaleFactor=1,
                mobile=False,
            )
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            if self.ws is not None:
                with contextlib.suppress(Exception):  # it may be gone already
                    self.send("Browser.close")
            self._closing.close()
        finally:
            if self.proc is not None:
                try:
                    self.proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait(timeout=10)
            self.profile.cleanup()

    def _wait_for_endpoint(self, timeout: float = 30) -> str:
        assert self.proc is not None and self.proc.stderr is not None
        deadline = time.monotonic() + timeout
        seen: list[str] = []
        while time.monotonic() < deadline:
            line = self.proc.stderr.readline()
            if not line and self.proc.poll() is not None:
                break
            seen.append(line)
            if match := _LISTENING.search(line):
                # keep reading its log, so that a full pipe never blocks the browser
                threading.Thread(target=self.proc.stderr.read, daemon=True).start()
                return match.group(1)
        raise RuntimeError("chromium did not open its DevTools endpoint:\n" + "".join(seen[-20:]))

    def send(self, method: str, **params: Any) -> dict[str, Any]:
        """Call `method`; keep the events that arrive meanwhile; the call's result."""
        assert self.ws is not None
        call_id = next(self._ids)
        self.ws.send(json.dumps({"id": call_id, "method": method, "params": params}))
        while True:
            message = json.loads(self.ws.recv(timeout=60))
            if message.get("id") == call_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return dict(message.get("result", {}))
            self._events.append(message)

    def evaluate(self, expression: str) -> Any:
        result = self.send("Runtime.evaluate", expression=expression, returnByValue=True)
        return result.get("result", {}).get("value")

    def load(
        self,
        url: str,
        expect: Sequence[str],
        *,
        local_storage: Mapping[str, str] | None = None,
        timeout: float = 60,
    ) -> float:
        """Load `url`, with `local_storage` set before the page's scripts run; wait until its
        text holds every string of `expect`: the seconds waited (raises after `timeout`)."""
        if local_storage:
            setup = "".join(
                f"localStorage.setItem({json.dumps(k)}, {json.dumps(v)});"
                for k, v in local_storage.items()
            )
            self.send("Page.addScriptToEvaluateOnNewDocument", source=f"try{{{setup}}}catch(e){{}}")
        self._events.clear()
        self.send("Page.navigate", url=url)
        return self.wait_for(expect, timeout)

    def wait_for(self, expect: Sequence[str], timeout: float = 60) -> float:
        """Wait until the page's text holds every string of `expect`: the seconds waited."""
        began = time.monotonic()
        check = " && ".join(f"document.body.innerText.includes({json.dumps(s)})" for s in expect)
        while True:
            if self.evaluate(f"!!document.body && ({check or 'true'})"):
                return time.monotonic() - began
            if time.monotonic() - began > timeout:
                missing = [
                    s for s in expect if s not in str(self.evaluate("document.body.innerText"))
                ]
                raise TimeoutError(f"after {timeout}s the page still lacks {missing}")
            time.sleep(0.25)

    def click_text(self, text: str, expect: Sequence[str] = (), timeout: float = 30) -> None:
        """Click the innermost element whose own text is `text`; wait for `expect`."""
        clicked = self.evaluate(
            "(() => {const want = " + json.dumps(text) + ";"
            "const all = [...document.querySelectorAll('body *')]"
            ".filter(e => e.childElementCount === 0 && e.textContent.trim() === want);"
            "if (!all.length) return false; all[0].click(); return true;})()"
        )
        if not clicked:
            raise LookupError(f"no element with the text {text!r} to click")
        self.wait_for(expect, timeout)

    def capture(self, settle_s: float = 1.0) -> Shot:
        """The screenshot, DOM, text and console errors, after `settle_s` for layout."""
        time.sleep(settle_s)
        png = base64.b64decode(self.send("Page.captureScreenshot", format="png")["data"])
        return Shot(
            png=png,
            dom=str(self.evaluate("document.documentElement.outerHTML")),
            text=str(self.evaluate("document.body.innerText")),
            errors=self._errors(),
        )

    def _errors(self) -> list[str]:
        errors = []
        for event in self._events:
            params = event.get("params", {})
            if event.get("method") == "Runtime.exceptionThrown":
                details = params.get("exceptionDetails", {})
                errors.append(str(details.get("exception", {}).get("description") or details))
            elif event.get("method") == "Log.entryAdded" and params["entry"]["level"] == "error":
                errors.append(str(params["entry"].get("text")))
            elif event.get("method") == "Runtime.consoleAPICalled" and params["type"] == "error":
                errors.append(
                    " ".join(str(a.get("value", a.get("description"))) for a in params["args"])
                )
        return errors


def save(shot: Shot, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(shot.png)
    return path
