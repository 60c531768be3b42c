"""Tests only: a Python the tests start (a CLI run) forks its local workers from the test process's server.

The tests put this folder on ``PYTHONPATH`` and name their fork server
(tests/support/worker_zygote.py) in ``COMPILE_STUDIO_TEST_FORK_SOCKET``. When such a
process imports the supervisor, its ``subprocess`` is swapped for one whose
Popen forks a plain local worker from that server (anything else starts as
usual). Without the variable nothing happens.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys

_SOCKET = os.environ.get("COMPILE_STUDIO_TEST_FORK_SOCKET")
_MODULE = "compile_studio.launchers.supervisor"
_ZYGOTE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "worker_zygote.py")


def _route(module: object) -> None:
    spec = importlib.util.spec_from_file_location("_compile_studio_test_worker_zygote", _ZYGOTE)
    if spec is None or spec.loader is None:
        return
    zygote_module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = zygote_module
    spec.loader.exec_module(zygote_module)
    zygote = zygote_module.Zygote.attach(_SOCKET)
    if zygote is not None:
        module.subprocess = zygote_module.PopenThroughZygote(zygote)  # type: ignore[attr-defined]


class _RouteWorkerStarts(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):  # noqa: ANN001 - the finder protocol
        if name != _MODULE:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        exec_module = loader.exec_module

        def exec_and_route(module: object) -> None:
            exec_module(module)
            try:
                _route(module)
            except Exception as exc:  # noqa: BLE001 - a worker that starts the usual way is fine
                sys.stderr.write(f"[tests] workers start without the fork server: {exc}\n")

        loader.exec_module = exec_and_route  # type: ignore[method-assign]
        return spec


if _SOCKET:
    sys.meta_path.insert(0, _RouteWorkerStarts())
