"""The one entry point: ``python -m compile_studio`` and the bundled executable.

The first argument picks what this process is, decided before Qt or torch is
imported:

- ``--worker ARGS``: the benchmark worker (a bundle has no ``python -m``, so
  the GUI re-runs its own executable with this flag).
- ``-c CODE [ARGS]``, ``-m MODULE [ARGS]``, ``SCRIPT.py [ARGS]``: behave like
  the Python interpreter. Inside a bundle ``sys.executable`` is this program,
  and torch's Inductor runs ``sys.executable -c CODE`` (the CPU vector-ISA
  probe) and ``sys.executable SCRIPT.py ARGS`` (its compile workers); without
  this they would open the window again, and Inductor would fall back to
  scalar kernels without a word.
- ``--self-test``: start the real window offscreen, run a tiny benchmark
  through a real worker, report and exit 0 or 1.
- anything else: the GUI.
"""

from __future__ import annotations

import os
import runpy
import sys
import types


def _flush_std() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (AttributeError, OSError, ValueError):
            pass


def _fresh_main_module(filename: str) -> types.ModuleType:
    module = types.ModuleType("__main__")
    module.__file__ = filename
    module.__dict__["__builtins__"] = __builtins__
    sys.modules["__main__"] = module
    return module


def run_code(code: str, args: list[str]) -> None:
    """Like ``python -c CODE ARGS``: ``sys.argv`` is ``["-c", *ARGS]``."""
    sys.argv = ["-c", *args]
    if sys.path and sys.path[0] != "":
        sys.path.insert(0, "")
    module = _fresh_main_module("<string>")
    del module.__file__
    exec(compile(code, "<string>", "exec"), module.__dict__)


def run_script(path: str, args: list[str]) -> None:
    """Like ``python SCRIPT.py ARGS``: runs the file as ``__main__``."""
    sys.argv = [path, *args]
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    runpy.run_path(path, run_name="__main__")


def run_module(name: str, args: list[str]) -> None:
    """Like ``python -m MODULE ARGS``."""
    sys.argv = [name, *args]
    runpy.run_module(name, run_name="__main__", alter_sys=True)


def _is_script(arg: str) -> bool:
    return arg.endswith((".py", ".pyw")) and os.path.isfile(arg)


#: Interpreter options a child process may be started with (``sys.executable -s -c …``,
#: as multiprocessing's forkserver does): accepted and ignored.
_PYTHON_FLAGS = {
    "-B", "-b", "-bb", "-d", "-E", "-I", "-O", "-OO", "-q", "-R", "-s", "-S", "-u", "-v",
}
_PYTHON_FLAGS_WITH_VALUE = {"-W", "-X"}


def strip_interpreter_flags(argv: list[str]) -> list[str]:
    """Drop leading Python interpreter options (``-s``, ``-u``, ``-X utf8`` …) from ``argv``."""
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in _PYTHON_FLAGS:
            i += 1
        elif arg in _PYTHON_FLAGS_WITH_VALUE:
            i += 2
        elif arg[:2] in _PYTHON_FLAGS_WITH_VALUE and len(arg) > 2:
            i += 1
        else:
            break
    return argv[i:] if i < len(argv) else argv


def main(argv: list[str] | None = None) -> int:
    """Dispatch on the first argument (see the module docstring); returns the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if getattr(sys, "frozen", False):
        import multiprocessing

        # a bundle re-run by multiprocessing (``--multiprocessing-fork``) serves it and exits
        multiprocessing.freeze_support()
    argv = strip_interpreter_flags(argv)
    first = argv[0] if argv else ""

    if first == "--worker":
        from compile_studio.worker import main as worker_main

        code = worker_main(argv[1:])
        _flush_std()
        # the worker may have threads blocked on stdin: leave without joining them
        os._exit(code if isinstance(code, int) else 0)

    if first == "-c" and len(argv) >= 2:
        run_code(argv[1], argv[2:])
        return 0
    if first == "-m" and len(argv) >= 2:
        run_module(argv[1], argv[2:])
        return 0
    if _is_script(first):
        run_script(first, argv[1:])
        return 0

    if first == "--self-test":
        from compile_studio.gui.self_test import main as self_test_main

        return self_test_main()

    from compile_studio.gui.app import main as gui_main

    return gui_main(argv)


if __name__ == "__main__":
    sys.exit(main())
