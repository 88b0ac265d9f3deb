"""A real headless browser for the tests of ``memcli view``: Debian's ``chromium``, no mocks.

:func:`render` opens a page from ``file://`` in headless Chromium, lets its script run
(``--virtual-time-budget``), and returns the DOM as the script left it (``--dump-dom``) and a
screenshot (PNG bytes), both from one run. Where ``unshare`` can make a network namespace (root)
the browser runs without network, so a page that tried to fetch anything would fail to draw.

Where no Chromium is installed the tests skip naming it; under CI (``CI=true``) they fail
(tests/helpers.py ``missing_here``): ``make test`` installs it as root.
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

from tests.helpers import missing_here


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    missing_here("Chromium (apt-get install chromium)")
    raise AssertionError("unreachable")


def _offline_prefix() -> list[str]:
    unshare = shutil.which("unshare")
    if unshare and os.geteuid() == 0 and subprocess.run([unshare, "-n", "true"], capture_output=True).returncode == 0:
        return [unshare, "-n"]
    return []


def render(page: Path, *, width: int = 1280, height: int = 1400, budget_ms: int = 10000) -> tuple[str, bytes]:
    """(DOM after the page's script ran, screenshot PNG) of ``page`` in headless Chromium."""
    shot = page.with_suffix(".png")
    profile = page.parent / f".chromium-profile-{page.stem}"
    done = subprocess.run(
        [*_offline_prefix(), chromium(), "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-extensions", f"--user-data-dir={profile}", f"--window-size={width},{height}",
         f"--virtual-time-budget={budget_ms}", f"--screenshot={shot}", "--dump-dom", page.resolve().as_uri()],
        capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    return done.stdout.decode(), shot.read_bytes()


def png_distinct_rows(png: bytes) -> int:
    """How many distinct scanlines a PNG has (1 for a blank page): decoded with zlib, no imaging library."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, width, height, bpp = 8, b"", 0, 0, 4
    while pos < len(png):
        length, kind = struct.unpack(">I4s", png[pos:pos + 8])
        body = png[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", body[:10])
            bpp = {2: 3, 6: 4, 0: 1, 4: 2}.get(color, 4) * max(depth // 8, 1)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * bpp + 1
    # rows as stored (filter byte + filtered data): a blank page gives one or two distinct rows
    # (the first, then "Up"-filtered zeros), a drawn page hundreds
    return len({raw[i * stride:(i + 1) * stride] for i in range(height)})
