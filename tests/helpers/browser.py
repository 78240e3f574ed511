"""Open a page in headless Chromium (Debian's ``chromium``): its DOM after scripts ran, console errors, a screenshot.

One browser start per page: ``--dump-dom`` and ``--screenshot`` in one run, and
``--enable-logging=stderr`` puts every console message (an uncaught error
among them) on stderr. A machine without Chromium skips the browser tests
with a message (``.ci/run`` installs it). "Not blank" is read from the
screenshot's PNG rows (``detail_rows``), so it needs no imaging library.
"""
from __future__ import annotations

import re
import shutil
import struct
import subprocess
import tempfile
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

CHROMIUM_NAMES = ("chromium", "chromium-browser")
SKIP_MESSAGE = "headless Chromium not installed (apt-get install chromium; .ci/run installs it): browser checks skipped"
_CONSOLE = re.compile(r":CONSOLE[^\]]*\] (.*)")


def chromium() -> str:
    """The Chromium binary, or a pytest skip saying how to get one."""
    for name in CHROMIUM_NAMES:
        found = shutil.which(name)
        if found:
            return found
    pytest.skip(SKIP_MESSAGE)


@dataclass
class Opened:
    dom: str
    console: list[str]  # every console message
    detail_rows: float  # share of the screenshot's pixel rows with detail (``detail_rows``)

    @property
    def errors(self) -> list[str]:
        return [m for m in self.console if "Uncaught" in m or "Error" in m]


def open_page(page: Path, width: int = 1280, height: int = 2000) -> Opened:
    binary = chromium()
    with tempfile.TemporaryDirectory(prefix="npu-tf-prof-browser-") as tmp:
        shot = Path(tmp) / "shot.png"
        done = subprocess.run(
            [binary, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", f"--user-data-dir={tmp}/profile",
             "--host-resolver-rules=MAP * ~NOTFOUND",  # no network: a page that needed it would fail to draw
             "--enable-logging=stderr", "--v=0", f"--window-size={width},{height}", f"--screenshot={shot}",
             "--dump-dom", page.resolve().as_uri()],
            capture_output=True, text=True, timeout=120,
        )
        assert shot.is_file(), f"no screenshot (exit {done.returncode}): {done.stderr[-2000:]}"
        share = detail_rows(shot.read_bytes())
    console = [m.group(1) for m in map(_CONSOLE.search, done.stderr.splitlines()) if m]
    return Opened(dom=done.stdout, console=console, detail_rows=share)


def detail_rows(png: bytes) -> float:
    """The share of an 8-bit RGB/RGBA PNG's pixel rows with detail, read from the filtered rows (no unfiltering).

    Every PNG row filter (none, sub, up, average, paeth) turns a row of one
    colour under a row of that colour into one residual repeated after the
    first pixel, and "up" does the same for a copy of the row above. So a
    row whose residuals vary holds an edge: a line of text, an axis, a
    chart's trace. A blank page gives 0; the charts page about half its rows.
    """
    assert png[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, width, channels = 8, b"", 0, 3
    while pos < len(png):
        length, kind = struct.unpack(">I4s", png[pos:pos + 8])
        body = png[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, _height, depth, colour = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and colour in (2, 6), (depth, colour)
            channels = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    rows = np.frombuffer(zlib.decompress(idat), dtype=np.uint8).reshape(-1, width * channels + 1)
    pixels = rows[:, 1:].reshape(len(rows), width, channels)[:, 1:]
    flat = (pixels == pixels[:, :1]).all(axis=(1, 2))
    return float(1.0 - flat.mean())
