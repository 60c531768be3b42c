"""The docs' pictures are made by a script from the current code (``make screenshots``): run at a
small size (a tiny model, few calls, offscreen, in its own process), it makes every picture the
README and docs name, with the app's own exports, and none shows a path of the machine."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

from PySide6.QtGui import QImage

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
SCRIPT = DOCS / "make_screenshots.py"


def _script():
    spec = importlib.util.spec_from_file_location("make_screenshots", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def named_pictures() -> set[str]:
    """Every local picture the README and docs/*.md show, as a path inside docs/."""
    names = set()
    for page in [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]:
        for target in re.findall(r"!\[[^\]]*\]\(([^)\s]+)", page.read_text(encoding="utf-8")):
            if "://" in target:
                continue
            path = (page.parent / target).resolve()
            names.add(path.relative_to(DOCS.resolve()).as_posix())
    return names


def test_every_picture_the_docs_name_is_one_the_script_makes():
    named = named_pictures()
    assert named, "the README names no picture"
    assert named <= set(_script().PICTURES), named - set(_script().PICTURES)
    assert "screenshots:" in (ROOT / "Makefile").read_text() and "docs/make_screenshots.py" in (
        ROOT / "Makefile"
    ).read_text()


def test_the_script_makes_them_all_at_a_small_size_showing_nothing_of_the_machine(tmp_path):
    out = tmp_path / "pictures"
    manifest = tmp_path / "texts.json"
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", PYTHONPATH=str(ROOT / "app"))
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--out", str(out), "--manifest", str(manifest)],
        capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path,
    )
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-3000:])
    for name in named_pictures():
        image = QImage(str(out / name))
        assert not image.isNull() and image.width() >= 300 and image.height() >= 200, name
    for name, size in (("screenshot.png", (1500, 950)), ("screenshot-1280x760.png", (1280, 760))):
        image = QImage(str(out / name))
        assert (image.width(), image.height()) == size, name
    seen = json.loads(manifest.read_text())
    machine = [seen["scratch"], tempfile.gettempdir().rstrip(os.sep) + os.sep, str(Path.home()) + os.sep,
               str(tmp_path)]
    host = socket.gethostname()
    if len(host) >= 4:
        machine.append(host)
    assert set(seen["texts"]) == set(_script().PICTURES)
    for name, texts in seen["texts"].items():
        assert texts, name
        for text in texts:
            assert not any(m in text for m in machine), (name, text)
