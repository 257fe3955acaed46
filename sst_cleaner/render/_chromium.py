"""Rendering pages offline in headless Chromium, driven over the DevTools protocol.

The browser is Debian's ``chromium`` (found on PATH, or given as ``chromium=``), talked
to over ``--remote-debugging-pipe``: JSON messages ended by a NUL byte on two file
descriptors, so nothing but the standard library is needed (no websocket client, no
browser download). One browser process renders many pages, one tab at a time.

Offline: every request of the tab is intercepted (``Fetch``); the page's own URL is
answered with the page's HTML, every other request (stylesheets, images, frames,
fonts) fails. Host names resolve to nothing either (``--host-resolver-rules``), so a
request the interception does not see (a websocket) cannot leave the machine. The
page's scripts do not run unless ``scripts=True``; the layout script
(:data:`~sst_cleaner.render._script.LAYOUT_SCRIPT`) runs either way, as the DevTools
client's own evaluation.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from typing import Any, Optional, Union

from sst_cleaner.engine._dom import decode_html
from sst_cleaner.render._script import LAYOUT_SCRIPT

#: the window a page is laid out in (CSS pixels): a common desktop width
VIEWPORT = (1280, 1024)
#: the URL a page without one is given (``.invalid`` never resolves, RFC 2606)
DEFAULT_URL = "http://page.invalid/"
#: seconds a page may take to load and lay out before it is given up
PAGE_TIMEOUT = 30.0
#: the largest page handed to the browser (bytes of HTML); larger pages are refused
MAX_PAGE_BYTES = 16 * 1024 * 1024
#: the largest DevTools message read from the browser (a page's dumped HTML is one)
MAX_MESSAGE_BYTES = 256 * 1024 * 1024

_FLAGS = (
    "--headless",
    "--remote-debugging-pipe",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-extensions",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--mute-audio",
    "--disable-breakpad",
    "--disable-crash-reporter",
    "--hide-scrollbars",
    # nothing resolves: a request the Fetch interception does not see fails too
    "--host-resolver-rules=MAP * ~NOTFOUND",
    "--proxy-server=http://127.0.0.1:9",
    "--proxy-bypass-list=<-loopback>",
    # an http page is rendered at its own URL, not upgraded to https first
    "--disable-features=HttpsUpgrades,HttpsFirstBalancedModeAutoEnable,HttpsFirstModeV2ForEngagedSites",
)


class RenderError(RuntimeError):
    """The browser could not be started, or could not render a page."""


def find_chromium(path: Optional[str] = None) -> Optional[str]:
    """The Chromium executable: ``path`` when given (it must exist), else ``chromium``,
    ``chromium-browser`` or ``google-chrome`` on PATH; None when there is none."""
    if path:
        found = shutil.which(path)
        return found
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


def _high_pipe() -> tuple[int, int]:
    """A pipe whose two ends are close-on-exec descriptors numbered 10 or more."""
    ends = []
    for fd in os.pipe():
        ends.append(fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10))
        os.close(fd)
    return ends[0], ends[1]


class Renderer:
    """One headless Chromium that renders pages offline and returns their HTML with
    the layout attributes written in (see :mod:`sst_cleaner.engine._layout`).

    ``with Renderer() as r: html = r.render(page_bytes, url)``. ``chromium``: the
    executable (default: found on PATH); ``scripts``: let the page's own scripts run
    (default False: a page is laid out from its markup and inline styles only);
    ``viewport``: (width, height) in CSS pixels; ``timeout``: seconds per page.
    Not thread-safe: one renderer renders one page at a time.
    """

    def __init__(
        self,
        chromium: Optional[str] = None,
        scripts: bool = False,
        viewport: tuple[int, int] = VIEWPORT,
        timeout: float = PAGE_TIMEOUT,
    ) -> None:
        exe = find_chromium(chromium)
        if exe is None:
            raise RenderError(
                f"no Chromium found ({chromium!r} is not an executable)"
                if chromium
                else "no Chromium found on PATH (install Debian's `chromium` package or pass its path)"
            )
        self.executable = exe
        self.scripts = bool(scripts)
        self.viewport = (int(viewport[0]), int(viewport[1]))
        self.timeout = float(timeout)
        self.pages = 0
        self._proc: Optional[subprocess.Popen] = None
        self._profile: Optional[str] = None
        self._to: Optional[int] = None
        self._from: Optional[int] = None
        self._buf = b""
        self._next_id = 0
        self._events: list[dict] = []
        self._log: Optional[Any] = None
        self._gone = False  # the browser's pipe broke or ended

    # -- process -------------------------------------------------------------------
    def start(self) -> "Renderer":
        if self._proc is not None:
            return self
        self._profile = tempfile.mkdtemp(prefix="sst-chromium-")
        # fd 3: the browser reads commands; fd 4: it writes replies and events. The child's
        # ends are first moved above 10 (close-on-exec) so that placing them on 3 and 4
        # cannot overwrite one with the other; every other descriptor of this process is
        # close-on-exec (Python's default), so close_fds is not needed
        cmd_r, cmd_w = _high_pipe()
        out_r, out_w = _high_pipe()
        args = [
            self.executable,
            *_FLAGS,
            f"--user-data-dir={self._profile}",
            f"--window-size={self.viewport[0]},{self.viewport[1]}",
            "about:blank",
        ]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            # Chromium refuses to start as root with its sandbox (containers, CI): the
            # pages are offline and their scripts off by default, which is what the
            # sandbox would otherwise contain
            args.insert(1, "--no-sandbox")
        self._log = open(os.path.join(self._profile, "chromium.log"), "wb")

        def child_fds() -> None:
            os.dup2(cmd_r, 3)
            os.dup2(out_w, 4)

        try:
            self._proc = subprocess.Popen(
                args,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=self._log,
                close_fds=False,
                preexec_fn=child_fds,
            )
        except OSError as exc:
            os.close(cmd_w)
            os.close(out_r)
            raise RenderError(f"cannot start {self.executable}: {exc}") from exc
        finally:
            os.close(cmd_r)
            os.close(out_w)
        self._to, self._from = cmd_w, out_r
        try:
            self._call("Browser.getVersion")
        except RenderError as exc:
            said = self._log_tail()
            self.close()
            raise RenderError(f"{exc}: {said}" if said else str(exc)) from exc
        return self

    def _log_tail(self) -> str:
        """The last line the browser wrote to standard error (why it did not start)."""
        if self._profile is None:
            return ""
        try:
            with open(os.path.join(self._profile, "chromium.log"), "rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - 2000))
                lines = f.read().decode("utf-8", "replace").strip().splitlines()
        except OSError:
            return ""
        return lines[-1][-300:] if lines else ""

    def close(self) -> None:
        proc, self._proc = self._proc, None
        for fd in (self._to, self._from):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self._to = self._from = None
        self._buf = b""
        self._gone = False
        if proc is not None:
            # the browser quits by itself once its pipe is closed; killing it first would
            # leave its helper processes writing into the profile being removed
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.terminate()
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        if self._log is not None:
            self._log.close()
            self._log = None
        if self._profile is not None:
            # helper processes may still be writing their last files for a moment
            for _ in range(50):
                shutil.rmtree(self._profile, ignore_errors=True)
                if not os.path.exists(self._profile):
                    break
                time.sleep(0.1)
            self._profile = None

    def __enter__(self) -> "Renderer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- the protocol --------------------------------------------------------------
    def _send(self, method: str, params: Optional[dict] = None, session: Optional[str] = None) -> int:
        if self._to is None:
            raise RenderError("the browser is not running")
        self._next_id += 1
        msg: dict = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        data = json.dumps(msg).encode("utf-8") + b"\0"
        try:
            while data:
                data = data[os.write(self._to, data) :]
        except OSError as exc:
            self._gone = True
            raise RenderError(f"the browser went away: {exc}") from exc
        return self._next_id

    def _read(self, deadline: float) -> dict:
        """The next message from the browser (RenderError past ``deadline``)."""
        assert self._from is not None
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise RenderError("the browser did not answer in time")
            ready, _, _ = select.select([self._from], [], [], left)
            if not ready:
                continue
            chunk = os.read(self._from, 1 << 20)
            if not chunk:
                self._gone = True
                raise RenderError("the browser went away")
            self._buf += chunk
            if len(self._buf) > MAX_MESSAGE_BYTES:
                raise RenderError("the browser sent a message over the size cap")
        raw, self._buf = self._buf.split(b"\0", 1)
        return json.loads(raw)

    def _call(self, method: str, params: Optional[dict] = None, session: Optional[str] = None) -> dict:
        """Send a command and wait for its reply; events that arrive meanwhile are kept."""
        msg_id = self._send(method, params, session)
        deadline = time.monotonic() + self.timeout
        while True:
            msg = self._read(deadline)
            if msg.get("id") == msg_id:
                if "error" in msg:
                    raise RenderError(f"{method}: {msg['error'].get('message', msg['error'])}")
                return msg.get("result", {})
            if "method" in msg:
                self._events.append(msg)

    # -- rendering -----------------------------------------------------------------
    def render(self, html: Union[str, bytes], url: Optional[str] = None, encoding: Optional[str] = None) -> str:
        """The page's HTML after an offline render, with the layout attributes written in.

        ``html``: the page (bytes are decoded as the engine decodes them: ``encoding``,
        else the page's own declaration, else detection); ``url``: where it came from
        (relative links resolve against it; default :data:`DEFAULT_URL`). Raises
        RenderError when the browser fails or the page does not load in time.
        """
        if isinstance(html, bytes):
            if len(html) > MAX_PAGE_BYTES:
                raise RenderError(f"page of {len(html)} bytes is over the render cap of {MAX_PAGE_BYTES}")
            html = decode_html(html, encoding)
        body = html.encode("utf-8", "replace")
        if len(body) > MAX_PAGE_BYTES:
            raise RenderError(f"page of {len(body)} bytes is over the render cap of {MAX_PAGE_BYTES}")
        if not url or not url.startswith(("http://", "https://")):
            url = DEFAULT_URL
        url = url.split("#", 1)[0]
        self.start()
        try:
            target = self._call("Target.createTarget", {"url": "about:blank"})["targetId"]
            try:
                session = self._call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
                return self._render_in(session, body, url)
            finally:
                try:
                    self._call("Target.closeTarget", {"targetId": target})
                except RenderError:
                    pass
                self._events.clear()
                self.pages += 1
        except RenderError:
            if self._gone or (self._proc is not None and self._proc.poll() is not None):
                self.close()  # the browser died: the next page starts a new one
            raise

    @property
    def pid(self) -> Optional[int]:
        """The browser's process id while it runs (None before :meth:`start`)."""
        return self._proc.pid if self._proc is not None else None

    def _render_in(self, session: str, body: bytes, url: str) -> str:
        self._events.clear()
        self._call("Fetch.enable", {"patterns": [{"urlPattern": "*"}]}, session)
        if not self.scripts:
            self._call("Emulation.setScriptExecutionDisabled", {"value": True}, session)
        self._call("Page.enable", {}, session)
        self._send("Page.navigate", {"url": url}, session)
        deadline = time.monotonic() + self.timeout
        served = False
        https = "https://" + url[len("http://") :] if url.startswith("http://") else url
        while True:
            msg = self._events.pop(0) if self._events else self._read(deadline)
            if msg.get("sessionId") != session:
                continue
            method = msg.get("method")
            if method == "Fetch.requestPaused":
                params = msg["params"]
                req_url = params["request"]["url"].split("#", 1)[0]
                # the navigation's own request; an http URL may come back as https
                # (Chromium upgrades some hosts to HTTPS before any request is made)
                if not served and req_url in (url, https) and params.get("resourceType") == "Document":
                    served = True
                    self._send(
                        "Fetch.fulfillRequest",
                        {
                            "requestId": params["requestId"],
                            "responseCode": 200,
                            "responseHeaders": [{"name": "Content-Type", "value": "text/html; charset=utf-8"}],
                            "body": base64.b64encode(body).decode("ascii"),
                        },
                        session,
                    )
                else:
                    self._send(
                        "Fetch.failRequest",
                        {"requestId": params["requestId"], "errorReason": "BlockedByClient"},
                        session,
                    )
            elif method == "Page.loadEventFired":
                if not served:  # what loaded is the browser's own error page
                    raise RenderError(f"the browser did not ask for the page's URL {url}")
                break
            elif "id" in msg and "error" in msg:
                raise RenderError(f"the browser refused the page: {msg['error'].get('message', msg['error'])}")
        result = self._call("Runtime.evaluate", {"expression": LAYOUT_SCRIPT, "returnByValue": True}, session)
        if "exceptionDetails" in result:
            raise RenderError("the layout script failed: " + str(result["exceptionDetails"].get("text", ""))[:200])
        value = result.get("result", {}).get("value")
        if not isinstance(value, str):
            raise RenderError("the rendered page has no BODY")
        return value


def render_html(
    html: Union[str, bytes],
    url: Optional[str] = None,
    encoding: Optional[str] = None,
    chromium: Optional[str] = None,
    scripts: bool = False,
) -> str:
    """Render one page in a browser started for it (see :class:`Renderer`; to render
    many pages, keep one :class:`Renderer` open instead)."""
    with Renderer(chromium, scripts=scripts) as r:
        return r.render(html, url, encoding)
