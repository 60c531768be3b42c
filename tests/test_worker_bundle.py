"""The worker bundle holds every module the worker imports: it runs where compile_studio is not installed."""

from __future__ import annotations

import site
import subprocess
import sys
import sysconfig

from compile_studio.launchers.worker_bundle import PACKAGE, build_bundle, worker_files

# no site processing (-S): the editable install's import hook, which would find a module
# the bundle lacks in this checkout, is not there; torch comes from site-packages by hand
CHECK = """
import sys
bundle, *paths = sys.argv[1:]
sys.path[:] = [bundle] + [p for p in sys.path if p] + paths
import compile_studio.worker
import compile_studio.engine.runner, compile_studio.engine.shape_sweep, compile_studio.engine.compile_host
outside = sorted(
    name for name, m in sys.modules.items()
    if name.startswith("compile_studio") and not (getattr(m, "__file__", "") or "").startswith(bundle)
)
print("outside:", outside)
"""


def test_the_worker_imports_from_the_bundle_alone(tmp_path):
    bundle = tmp_path / "worker.pyz"
    bundle.write_bytes(build_bundle().data)
    paths = [sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"], *site.getsitepackages()]
    proc = subprocess.run(
        [sys.executable, "-S", "-c", CHECK, str(bundle), *dict.fromkeys(paths)],
        cwd=tmp_path, capture_output=True, text=True, timeout=240,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip().endswith("outside: []"), proc.stdout


def test_the_bundle_has_no_window_cli_or_results_code():
    names = {str(p.relative_to(PACKAGE)) for p in worker_files()}
    assert "worker.py" in names and "engine/runner.py" in names
    assert not {n for n in names if n.startswith(("gui/", "results/", "cli"))}
