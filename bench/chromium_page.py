"""A page of the repository in Debian's Chromium, for the benches that measure the view.

The repository is served on a loopback port (so the page imports the built bundle and the
JS test helpers as the browser tests do), with one generated page of the bench's own.
"""

from __future__ import annotations

import functools
import http.server
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]


class _Site(http.server.SimpleHTTPRequestHandler):
    page_path = ""
    page = b""

    def log_message(self, *args) -> None:  # the bench prints its own lines
        pass

    def do_GET(self) -> None:
        if self.path == "/favicon.ico":
            self.send_response(204)
            self.end_headers()
            return
        if self.path != self.page_path:
            super().do_GET()
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(self.page)))
        self.end_headers()
        self.wfile.write(self.page)


@contextmanager
def chromium_page(html: str, name: str) -> Iterator[tuple[Any, Any]]:
    """(browser, page) with ``html`` served as ``/name`` and loaded, once it sets ``window.ready``."""
    from playwright.sync_api import sync_playwright

    site = type("_Page", (_Site,), {"page_path": f"/{name}", "page": html.encode()})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(site, directory=str(ROOT)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            try:
                page = browser.new_page()
                page.goto(f"http://127.0.0.1:{server.server_port}/{name}")
                page.wait_for_function("() => window.ready === true")
                yield browser, page
            finally:
                browser.close()
    finally:
        server.shutdown()
