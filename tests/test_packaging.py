"""The front door: wheel contents, resources found in every install, desktop files, entry point."""

from __future__ import annotations

import configparser
import importlib.util
import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from compile_studio.__main__ import strip_interpreter_flags
from compile_studio.core import protocol
from compile_studio.core.config import BenchmarkConfig
from compile_studio.core.resources_path import (
    APP_ID,
    ICON_SIZES,
    icon_path,
    icon_paths,
    load_presets,
    resources_dir,
)

pytestmark = [pytest.mark.long, pytest.mark.fresh_worker]  # the app's own starts, end to end

ROOT = Path(__file__).resolve().parent.parent
PACKAGING = ROOT / "packaging"
DESKTOP_FILE = PACKAGING / f"{APP_ID}.desktop"
METAINFO_FILE = PACKAGING / f"{APP_ID}.metainfo.xml"
PYTHON = sys.executable

EXPECTED_PRESETS = [
    "Seed MLP (1024,1024,512,10, batch 256)",
    "Tiny (64,64,10)",
    "Wide (4096,4096,4096)",
    "Deep (8\u00d71024)",
    "Training step (seed MLP)",
]


def _run(args: list[str], timeout: float = 120, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, **kw)


# -- the wheel -----------------------------------------------------------------------


def _copy_source_tree(dest: Path) -> Path:
    """The files a wheel is built from, copied so the build never writes into the repo."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    shutil.copytree(ROOT / "app", dest / "app", ignore=ignore)
    shutil.copytree(ROOT / "resources", dest / "resources", ignore=ignore)
    shutil.copy2(ROOT / "pyproject.toml", dest / "pyproject.toml")
    for name in ("README.md", "LICENSE"):
        if (ROOT / name).exists():
            shutil.copy2(ROOT / name, dest / name)
    return dest


def _build(source: Path, kind: str, out: Path) -> Path:
    if importlib.util.find_spec("build") is None or importlib.util.find_spec("setuptools") is None:
        pytest.skip("'build' and 'setuptools' are not installed (pip install -e '.[test]')")
    code = (
        "import sys; from build import ProjectBuilder; "
        "print(ProjectBuilder(sys.argv[1]).build(sys.argv[2], sys.argv[3]))"
    )
    proc = _run([PYTHON, "-c", code, str(source), kind, str(out)], timeout=180)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    return Path(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Path]:
    """A wheel and an editable wheel built (offline, no isolation) from a copy of the tree."""
    base = tmp_path_factory.mktemp("wheel")
    source = _copy_source_tree(base / "src")
    return {
        "source": source,
        "wheel": _build(source, "wheel", base / "dist"),
        "editable": _build(source, "editable", base / "dist-editable"),
    }


def _resources_seen_from(site_dir: Path) -> dict:
    """Import compile_studio from ``site_dir`` alone (no site-packages); locate resources."""
    code = (
        "import json, site, sys; site.addsitedir(sys.argv[1]);"
        "import importlib.resources as ir, compile_studio.core.resources_path as r;"
        "print(json.dumps({'module': __import__('compile_studio').__file__,"
        " 'package': str(ir.files('compile_studio.resources')),"
        " 'dir': str(r.resources_dir()), 'presets': len(r.load_presets()),"
        " 'icons': [str(p) for p in r.icon_paths()]}))"
    )
    proc = _run([PYTHON, "-S", "-c", code, str(site_dir)], cwd=site_dir)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def test_wheel_holds_resources_and_entry_points(built):
    with zipfile.ZipFile(built["wheel"]) as whl:
        names = set(whl.namelist())
        entry_points_name = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
        entry_points = configparser.ConfigParser()
        entry_points.read_string(whl.read(entry_points_name).decode())
    assert "compile_studio/resources/presets.json" in names
    assert "compile_studio/resources/icons/compile-studio.svg" in names
    for size in ICON_SIZES:
        assert f"compile_studio/resources/icons/compile-studio-{size}.png" in names
    assert "compile_studio/__main__.py" in names
    assert "compile_studio/worker.py" in names
    assert entry_points["gui_scripts"]["compile-studio"].strip()
    console = entry_points["console_scripts"]
    assert console["compile-studio-cli"].strip() == "compile_studio.cli:main"
    # no stray top-level package named after the folder
    assert not any(n.startswith("resources/") for n in names)


def test_installed_wheel_finds_resources_with_importlib(built, tmp_path):
    site_dir = tmp_path / "site"
    with zipfile.ZipFile(built["wheel"]) as whl:
        whl.extractall(site_dir)
    seen = _resources_seen_from(site_dir)
    expected = site_dir / "compile_studio" / "resources"
    assert Path(seen["module"]).is_relative_to(site_dir)
    assert Path(seen["package"]) == expected
    assert Path(seen["dir"]) == expected
    assert seen["presets"] == len(EXPECTED_PRESETS)
    assert len(seen["icons"]) == len(ICON_SIZES) + 1
    assert all(Path(p).is_relative_to(expected) for p in seen["icons"])


def test_editable_install_finds_resources_at_the_repository_root(built, tmp_path):
    site_dir = tmp_path / "site"
    with zipfile.ZipFile(built["editable"]) as whl:
        whl.extractall(site_dir)
    seen = _resources_seen_from(site_dir)
    source = built["source"]
    assert Path(seen["module"]).is_relative_to(source / "app")
    assert Path(seen["package"]) == source / "resources"
    assert Path(seen["dir"]) == source / "resources"
    assert seen["presets"] == len(EXPECTED_PRESETS)


def test_package_list_names_every_sub_package():
    tomllib = pytest.importorskip("tomllib")
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    listed = set(data["tool"]["setuptools"]["packages"])
    on_disk = {
        ".".join(init.parent.relative_to(ROOT / "app").parts)
        for init in (ROOT / "app" / "compile_studio").rglob("__init__.py")
    }
    missing = on_disk - listed
    assert not missing, f"add to [tool.setuptools] packages in pyproject.toml: {sorted(missing)}"
    assert {"compile_studio.resources", "compile_studio.resources.icons"} <= listed


# -- resources -----------------------------------------------------------------------


def test_presets_are_the_documented_ones_and_all_validate():
    presets = load_presets()
    assert [p["name"] for p in presets] == EXPECTED_PRESETS
    assert [p["default"] for p in presets] == [True, False, False, False, False]
    for preset in presets:
        config = BenchmarkConfig.from_dict(preset["config"])
        assert config.problems() == [], preset["name"]
        assert preset["description"]
    seed = BenchmarkConfig.from_dict(presets[0]["config"])
    assert (seed.layers, seed.batch_size, seed.workload) == ("1024,1024,512,10", 256, "inference")
    deep = BenchmarkConfig.from_dict(presets[3]["config"])
    assert len(deep.layer_sizes()) == 9  # input + 8 layers of 1024
    assert set(deep.layer_sizes()) == {1024}
    training = BenchmarkConfig.from_dict(presets[4]["config"])
    assert training.workload == "training"


def test_icons_are_the_svg_rendered_at_each_size(qapp, tmp_path):
    from PySide6.QtGui import QImage
    from PySide6.QtSvg import QSvgRenderer

    sys.path.insert(0, str(PACKAGING))
    try:
        from render_icons import render_icons
    finally:
        sys.path.remove(str(PACKAGING))

    svg = icon_path()
    assert QSvgRenderer(str(svg)).isValid()
    fresh = {p.name: p for p in render_icons(svg, tmp_path)}
    for size in ICON_SIZES:
        shipped = QImage(str(icon_path(size)))
        assert (shipped.width(), shipped.height()) == (size, size)
        again = QImage(str(fresh[f"compile-studio-{size}.png"]))
        # same picture: compare the alpha channel and colour at a grid of points
        diffs = []
        for y in range(0, size, max(1, size // 16)):
            for x in range(0, size, max(1, size // 16)):
                a, b = shipped.pixelColor(x, y), again.pixelColor(x, y)
                diffs.append(
                    max(abs(a.red() - b.red()), abs(a.green() - b.green()),
                        abs(a.blue() - b.blue()), abs(a.alpha() - b.alpha()))
                )
        assert max(diffs) <= 8, f"{size}px icon is stale: run 'make icons'"
        # opaque in the middle, transparent in the corner (a rounded square)
        assert shipped.pixelColor(size // 2, size // 2).alpha() == 255
        assert shipped.pixelColor(0, 0).alpha() == 0
    assert icon_path(20) == icon_path(32)
    assert icon_path(1000) == icon_path(256)
    assert all(p.is_file() for p in icon_paths())
    assert resources_dir() == icon_path().parent.parent


# -- desktop entry and AppStream metadata --------------------------------------------


def test_desktop_entry_validates():
    validator = shutil.which("desktop-file-validate")
    if validator is None:
        pytest.skip("desktop-file-validate is not installed (Debian: desktop-file-utils)")
    proc = _run([validator, str(DESKTOP_FILE)])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "error" not in (proc.stdout + proc.stderr).lower()
    entry = configparser.ConfigParser(interpolation=None)
    entry.optionxform = str
    entry.read(DESKTOP_FILE)
    group = entry["Desktop Entry"]
    assert group["Exec"] == "compile-studio"
    assert group["Icon"] == APP_ID
    assert {"Development", "Science"} <= set(filter(None, group["Categories"].split(";")))


def test_appstream_metainfo_validates():
    validator = shutil.which("appstreamcli")
    if validator is None:
        pytest.skip("appstreamcli is not installed (Debian: appstream)")
    proc = _run([validator, "validate", "--no-net", str(METAINFO_FILE)])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    import xml.etree.ElementTree as ET

    root = ET.parse(METAINFO_FILE).getroot()
    assert root.findtext("id") == APP_ID
    assert root.find("launchable").text == DESKTOP_FILE.name
    assert "compile-studio" in [b.text for b in root.iter("binary")]


# -- the entry point: python -m compile_studio ---------------------------------------


def test_worker_flag_says_hello():
    proc = _run([PYTHON, "-m", "compile_studio", "--worker", "--hello"])
    assert proc.returncode == 0, proc.stderr[-2000:]
    events = [e for e in map(protocol.decode, proc.stdout.splitlines()) if e]
    assert [type(e) for e in events] == [protocol.HelloEvent]
    assert "cpu" in events[0].environment["devices"]
    assert events[0].pid != 0


@pytest.mark.parametrize(
    "args",
    [
        ["-c", "import sys; print(sys.argv, __name__)", "a", "b"],
        ["-c", "import sys; print('x'); sys.exit(7)"],
        ["-c", "raise ValueError('boom')"],
        ["-c", "print(__file__)"],
    ],
)
def test_dash_c_behaves_like_python(args):
    ours = _run([PYTHON, "-m", "compile_studio", *args])
    real = _run([PYTHON, *args])
    assert ours.returncode == real.returncode
    assert ours.stdout == real.stdout
    assert ours.stderr.strip().splitlines()[-1:] == real.stderr.strip().splitlines()[-1:]


def test_script_and_interpreter_flags_behave_like_python(tmp_path):
    script = tmp_path / "probe_script.py"
    helper = tmp_path / "sibling_module.py"
    helper.write_text("VALUE = 42\n")
    script.write_text(
        "import sys, sibling_module\n"
        "print(sys.argv[1:], __name__, sibling_module.VALUE)\n"
        "sys.exit(int(sys.argv[1]))\n"
    )
    ours = _run([PYTHON, "-m", "compile_studio", str(script), "3", "--flag"])
    assert (ours.returncode, ours.stdout) == (3, "['3', '--flag'] __main__ 42\n"), ours.stderr
    # a child started as `sys.executable -s -u -X utf8 -c CODE` (multiprocessing does so)
    flagged = _run([PYTHON, "-m", "compile_studio", "-s", "-u", "-X", "utf8", "-c", "print(1)"])
    assert (flagged.returncode, flagged.stdout) == (0, "1\n"), flagged.stderr
    assert strip_interpreter_flags(["-B", "-Wignore", "-c", "x"]) == ["-c", "x"]
    assert strip_interpreter_flags(["--self-test"]) == ["--self-test"]
    assert strip_interpreter_flags([]) == []


# -- the self-test -------------------------------------------------------------------


def test_self_test_judges_runs():
    from compile_studio.gui.self_test import check_run
    from compile_studio.results import RunResult

    run = RunResult(run_id="r", created="now", config=None, status="complete")
    for name in ("eager", "aot_eager"):
        variant = run.variant(name)
        variant.status = "done"
        variant.samples.extend(0, "warmup", [5.0, 4.0], None)
        variant.samples.extend(2, "measure", [1.0, 1.1, 0.9], None)
    assert check_run(run, ["eager", "aot_eager"]) == []
    problems = check_run(run, ["eager", "aot_eager", "default"])
    assert problems == ["variant default: missing from the result"]
    run.variants["aot_eager"].samples = type(run.variants["aot_eager"].samples)()
    run.variants["aot_eager"].samples.extend(0, "warmup", [5.0], None)
    run.status = "failed"
    problems = check_run(run, ["eager", "aot_eager"])
    assert any("not 'complete'" in p for p in problems)
    assert any("aot_eager: no measured samples" in p for p in problems)
    assert check_run(None, ["eager"]) == ["no run result"]


@pytest.mark.inductor
def test_self_test_passes_end_to_end():
    """``python -m compile_studio --self-test``: the real window, worker and torch."""
    if importlib.util.find_spec("compile_studio.gui.main_window") is None:
        pytest.fail("compile_studio.gui.main_window is missing: the app has no window")
    proc = _run([PYTHON, "-m", "compile_studio", "--self-test"], timeout=240)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert "SELF-TEST PASSED" in proc.stdout
    for name in ("eager", "aot_eager"):
        assert any(line.split()[:2] == [name, "done"] for line in proc.stdout.splitlines())
