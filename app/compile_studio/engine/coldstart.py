"""Start-up cost: each compiled variant's time to first result in fresh processes, per cache kind.

A cold-start worker (``--coldstart``) reads a :class:`protocol.ColdStartRequest`
and, round after round, starts one fresh Python process per measurement
(``--coldstart-child``) with the compiler caches pointed where the start kind
says:

* ``eager``: the reference, no compile (a fresh, empty cache folder);
* ``cold``: a fresh, empty folder for every compiler cache (Inductor's FX
  graph, AOT-autograd, kernel and autotune caches under
  ``TORCHINDUCTOR_CACHE_DIR``, Triton's under ``TRITON_CACHE_DIR``); after its
  first fast call the process saves its Mega-Cache artifacts
  (``torch.compiler.save_cache_artifacts``) to a file beside that folder;
* ``warm``: the folder the cold start of the same round filled, a second time
  (what a second run of the user's program on this machine finds);
* ``carried``: another fresh, empty folder; the process checks it is empty,
  loads the artifacts (``torch.compiler.load_cache_artifacts``: the cold
  start's, or those of a cache file the user chose) and then compiles.

The FX-graph and AOT-autograd caches are switched on in every process
(``TORCHINDUCTOR_FX_GRAPH_CACHE=1``, ``TORCHINDUCTOR_AUTOGRAD_CACHE=1``).
Warm and carried alternate their order from round to round, and the variants
rotate, so drift over the job hits every kind alike. Each process sends one
``coldstart_point`` line; the worker forwards it with the round filled in.
Times are measured from just before the process is started, on the system's
monotonic clock (shared by the processes), so imports count: that is what a
new program pays.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from typing import IO, TYPE_CHECKING, Any

from ..core import protocol

if TYPE_CHECKING:
    import torch

    from .compile_records import CompileRecords
    from .timing import CallTimer
    from .variant import Variant

#: A call is "fast" once it takes at most this many times the steady calls' median.
FAST_FACTOR = 1.5
#: Phases may fall this far short of the first call before the gap is shown as ``other``.
PHASE_TOLERANCE = 0.10
#: Longest a single process may take (a cold compile of a large model on a slow machine).
CHILD_TIMEOUT_S = 3600.0


def cache_environment(folder: str) -> dict[str, str]:
    """The environment that points every compiler cache into ``folder`` and turns the caches on."""
    return {
        "TORCHINDUCTOR_CACHE_DIR": os.path.join(folder, "inductor"),
        "TRITON_CACHE_DIR": os.path.join(folder, "triton"),
        "TORCHINDUCTOR_FX_GRAPH_CACHE": "1",
        "TORCHINDUCTOR_AUTOGRAD_CACHE": "1",
    }


def kinds_order(kinds: list[str], round_index: int, loaded: bool) -> list[str]:
    """The order the start kinds of one variant run in a round.

    ``cold`` comes first (``warm`` reuses its folder; ``carried`` its artifacts
    unless ``loaded`` from a file); ``warm`` and ``carried`` swap every round.
    A cold start runs even when not asked for when warm or carried need it.
    """
    rest = [k for k in ("warm", "carried") if k in kinds]
    if round_index % 2:
        rest.reverse()
    needs_cold = "cold" in kinds or "warm" in kinds or ("carried" in kinds and not loaded)
    return (["cold"] if needs_cold else []) + rest


def phases_with_other(phases: dict[str, float], total_s: float) -> dict[str, float]:
    """``phases`` (non-zero ones) plus ``other`` for the gap when they fall >10 % short of ``total_s``."""
    out = {k: round(v, 6) for k, v in phases.items() if v > 0}
    gap = total_s - sum(out.values())
    if total_s > 0 and gap > PHASE_TOLERANCE * total_s:
        out["other"] = round(gap, 6)
    return out


# -- the worker's side -------------------------------------------------------------------------

class ChildFailed(RuntimeError):
    """A measuring process ended without its result; the message says how."""


class ColdStartRunner:
    """Runs a cold-start request: the rounds of fresh processes, their points sent to ``sink``."""

    def __init__(
        self,
        request: protocol.ColdStartRequest,
        emit: Callable[[protocol.Event], None],
        stop: threading.Event,
        command: list[str],
        cwd: str | None = None,
    ):
        from ..core.config import BenchmarkConfig

        self.request = request
        self.config = BenchmarkConfig.from_dict(request.config)
        self.emit = emit
        self.stop = stop
        self.command = command
        self.cwd = cwd
        self._temp = tempfile.mkdtemp(prefix="compile-studio-coldstart-")
        self._loaded_paths: dict[str, str] = {}
        self._saved: set[str] = set()

    def run(self) -> protocol.RunStatus:
        """Every round to its end; STOPPED when asked to stop, FAILED when nothing was measured."""
        try:
            return self._run()
        finally:
            shutil.rmtree(self._temp, ignore_errors=True)

    def _run(self) -> protocol.RunStatus:
        for variant, text in self.request.artifacts.items():
            path = os.path.join(self._temp, f"loaded-{len(self._loaded_paths)}.bin")
            with open(path, "wb") as fh:
                fh.write(base64.b64decode(text.encode("ascii"), validate=True))
            self._loaded_paths[variant] = path
        variants = list(self.config.compiled_variants())
        measured = 0
        for r in range(self.request.rounds):
            order = variants[r % len(variants):] + variants[: r % len(variants)] if variants else []
            if self._point("eager", protocol.EAGER_START, r, self._fresh()):
                measured += 1
            for variant in order:
                measured += self._variant_round(variant, r)
                if self.stop.is_set():
                    return protocol.RunStatus.STOPPED
            if self.stop.is_set():
                return protocol.RunStatus.STOPPED
        return protocol.RunStatus.COMPLETE if measured else protocol.RunStatus.FAILED

    def _fresh(self) -> str:
        return tempfile.mkdtemp(prefix="cache-", dir=self._temp)

    def _variant_round(self, variant: str, r: int) -> int:
        loaded = self._loaded_paths.get(variant)
        cold_dir = self._fresh()
        art = os.path.join(self._temp, f"artifacts-{r}-{len(os.listdir(self._temp))}.bin")
        done = 0
        cold_ok = False
        try:
            for kind in kinds_order(self.request.kinds, r, loaded is not None):
                if self.stop.is_set():
                    break
                if kind == "cold":
                    cold_ok = self._point(variant, kind, r, cold_dir, save=art)
                    done += cold_ok
                    if cold_ok and self.request.save_artifacts and variant not in self._saved:
                        self._send_artifacts(variant, art)
                elif kind == "warm":
                    if not cold_ok:
                        self._failed(variant, kind, r, "the cold start before it failed: nothing to find")
                        continue
                    done += self._point(variant, kind, r, cold_dir)
                else:
                    source = loaded or (art if cold_ok and os.path.exists(art) else None)
                    if source is None:
                        why = ("the cold start saved no artifacts" if cold_ok
                               else "the cold start before it failed: no artifacts to carry")
                        why = _missing_api(art) or why
                        self._failed(variant, kind, r, why)
                        continue
                    carried_dir = self._fresh()
                    try:
                        done += self._point(variant, kind, r, carried_dir, load=source)
                    finally:
                        shutil.rmtree(carried_dir, ignore_errors=True)
        finally:
            shutil.rmtree(cold_dir, ignore_errors=True)
            for leftover in (art, art + ".json"):
                if os.path.exists(leftover):
                    os.unlink(leftover)
        return done

    def _send_artifacts(self, variant: str, path: str) -> None:
        try:
            with open(path, "rb") as fh:
                data = fh.read(protocol.MAX_ARTIFACT_BYTES + 1)
            meta_path = path + ".json"
            with open(meta_path, encoding="utf-8") as fh:
                meta = json.load(fh)
        except (OSError, ValueError):
            return
        if len(data) > protocol.MAX_ARTIFACT_BYTES:
            self.emit(protocol.WarningEvent(
                message=f"{variant}: the cache artifacts are larger than "
                f"{protocol.MAX_ARTIFACT_BYTES >> 20} MiB: not saved"
            ))
            return
        self._saved.add(variant)
        self.emit(protocol.CacheArtifactsEvent(
            variant=variant, data=base64.b64encode(data).decode("ascii"), size=len(data),
            sha256=hashlib.sha256(data).hexdigest(), artifacts=dict(meta.get("artifacts", {})),
            environment=dict(meta.get("environment", {})),
        ))

    def _failed(self, variant: str, kind: str, r: int, why: str) -> None:
        self.emit(protocol.ColdStartPointEvent(variant=variant, start=kind, round=r, error=why))

    def _point(self, variant: str, kind: str, r: int, folder: str,
               save: str | None = None, load: str | None = None) -> bool:
        """One fresh process measured; its point sent (with an error when it failed)."""
        request = {
            "config": self.request.config, "variant": variant, "kind": kind,
            "calls": self.request.calls, "save": save, "load": load,
        }
        env = {**os.environ, **cache_environment(folder)}
        try:
            point = self._child(env, json.dumps(request))
        except ChildFailed as exc:
            if self.stop.is_set():
                return False
            self._failed(variant, kind, r, str(exc)[:1000])
            return False
        point.round = r
        point.variant, point.start = variant, kind
        self.emit(point)
        return point.error is None

    def _child(self, env: dict[str, str], line: str) -> protocol.ColdStartPointEvent:
        t_start = time.monotonic()
        proc = subprocess.Popen(
            [*self.command, f"{t_start!r}"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=None, env=env, cwd=self.cwd, start_new_session=True,
        )
        try:
            assert proc.stdin is not None and proc.stdout is not None
            try:
                proc.stdin.write(line.encode() + b"\n")
                proc.stdin.close()
            except (BrokenPipeError, OSError):
                pass
            fd = proc.stdout.fileno()
            buffer = b""
            deadline = t_start + CHILD_TIMEOUT_S
            while True:
                if self.stop.is_set():
                    raise ChildFailed("stopped")
                if time.monotonic() > deadline:
                    raise ChildFailed(f"no result within {CHILD_TIMEOUT_S:.0f} s")
                ready, _, _ = select.select([fd], [], [], 0.05)
                if not ready:
                    continue
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    break
                buffer += chunk
            for raw in buffer.decode("utf-8", "replace").splitlines():
                event = protocol.decode(raw)
                if isinstance(event, protocol.ColdStartPointEvent):
                    return event
            code = proc.wait(timeout=10)
            raise ChildFailed(f"the process ended without a result (exit code {code})")
        finally:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass


def _missing_api(artifacts: str) -> str | None:
    """What a cold start wrote when its torch has no Mega-Cache (None: it has)."""
    try:
        with open(artifacts + ".json", encoding="utf-8") as fh:
            meta = json.load(fh)
    except (OSError, ValueError):
        return None
    missing = meta.get("missing") if isinstance(meta, dict) else None
    return str(missing)[:300] if missing else None


# -- the measuring process ---------------------------------------------------------------------

def _count_entries(folder: str) -> int:
    n = 0
    for _root, dirs, files in os.walk(folder):
        n += len(dirs) + len(files)
    return n


def _leave_with_parent() -> None:
    """End this process (and, with its session, its compile workers) once its worker is gone.

    It runs in a session of its own (so that a stop kills its compile workers with it):
    a worker killed outright cannot reach it, so it watches for that itself.
    """
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        try:
            os.killpg(0, signal.SIGKILL)
        finally:
            os._exit(1)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def child_main(out: IO[str], argv: list[str]) -> int:
    """``--coldstart-child T0``: one start measured in this process; one ``coldstart_point`` on ``out``.

    ``T0`` is the monotonic time the worker started this process at. Reads its
    request (config, variant, kind, calls, where to save or load artifacts)
    from stdin before importing torch.
    """
    try:
        t0 = float(argv[argv.index(protocol.COLDSTART_CHILD_FLAG) + 1])
    except (ValueError, IndexError):
        t0 = time.monotonic()
    _leave_with_parent()
    request = json.loads(sys.stdin.readline())
    variant, kind = str(request["variant"]), str(request["kind"])
    point = protocol.ColdStartPointEvent(variant=variant, start=kind, round=0, pid=os.getpid())
    try:
        _measure(point, request, t0)
    except Exception as exc:  # noqa: BLE001 - reported as the point's error
        import traceback

        traceback.print_exc(file=sys.stderr)
        point.error = f"{type(exc).__name__}: {exc}"[:1000]
    out.write(protocol.encode(point) + "\n")
    out.flush()
    return 0 if point.error is None else 3


def _measure(point: protocol.ColdStartPointEvent, request: dict[str, Any], t0: float) -> None:
    """One start of ``point``'s variant in this process: artifacts loaded (if asked), the model
    built, its first, next and steady calls timed, its compile's phases, artifacts saved."""
    import contextlib

    import torch

    from ..core.config import BenchmarkConfig
    from .compile_records import CompileRecords, timed_lengths
    from .environment import compile_modes
    from .run_state import apply_precision, resolve_device
    from .timing import CallTimer
    from .variant import variant_of
    from .workloads import build_workload, conversion_dtype

    point.import_s = time.monotonic() - t0
    config = BenchmarkConfig.from_json(json.dumps(request["config"]))
    if config.backend_modules:
        from .backends import load_backend_modules

        load_backend_modules(config.backend_modules)
    kind, name = point.start, point.variant
    if request.get("load"):
        _load_artifacts(point, request["load"])
    device = torch.device(resolve_device(config.device))
    if device.type == "cuda":
        torch.cuda.set_device(device)
    apply_precision(config.dtype)
    modes = compile_modes()
    workload = build_workload(config, name).to(device, conversion_dtype(config.dtype))
    v = variant_of(config, name, workload, device, modes)
    timer = CallTimer(device)
    training = config.workload == "training"
    grad: Callable[[], Any] = contextlib.nullcontext if training else torch.inference_mode
    records = CompileRecords()
    marks = timed_lengths()
    point.ready_s = time.monotonic() - t0
    _time_calls(point, v, workload.inputs, timer, grad, t0, request["calls"])
    point.eager_ms = point.call_ms if kind == protocol.EAGER_START else None
    if kind != protocol.EAGER_START:
        _note_compile(point, records, marks)
    if request.get("save"):
        _save_artifacts(request["save"], device)


def _load_artifacts(point: protocol.ColdStartPointEvent, path: str) -> None:
    """The compile artifacts at ``path`` loaded into this process's (empty) caches, timed."""
    import torch

    folder = os.path.dirname(os.environ["TORCHINDUCTOR_CACHE_DIR"])
    point.files_before_load = _count_entries(folder)
    with open(path, "rb") as fh:
        blob = fh.read()
    t = time.monotonic()
    info = torch.compiler.load_cache_artifacts(blob)
    point.load_s = time.monotonic() - t
    point.loaded = {k: len(v) for k, v in (info.artifacts.items() if info is not None else [])}
    if not point.loaded:
        raise RuntimeError("torch.compiler.load_cache_artifacts loaded nothing from the artifacts")


def _time_calls(
    point: protocol.ColdStartPointEvent,
    v: Variant,
    x: Any,
    timer: CallTimer,
    grad: Callable[[], Any],
    t0: float,
    calls: int,
) -> None:
    """The first call, the few after it, then ``calls`` steady ones, timed: when the first
    result came and when the calls first ran at the steady speed."""
    with grad():
        t = time.monotonic()
        v.step(x)
        timer.sync()
        end = time.monotonic()
    point.first_call_s = end - t
    point.first_result_s = end - t0
    ends = [end]
    times = [end - t]
    # the calls after it, until the steady state shows
    with grad():
        for _ in range(min(3, calls)):
            t = time.monotonic()
            v.step(x)
            timer.sync()
            ends.append(time.monotonic())
            times.append(ends[-1] - t)
    # then the steady calls: this process's own variant only (eager's are its own process's: an
    # eager call beside compiled kernels meets their thread pool and is not what an eager program sees)
    own: list[float] = []
    with grad():
        for _ in range(int(calls)):
            t = time.monotonic()
            v.step(x)
            timer.sync()
            own.append(time.monotonic() - t)
    steady = sorted(own)[len(own) // 2]
    point.call_ms = steady * 1000.0
    point.calls = len(own)
    fast = next((i for i, d in enumerate(times) if d <= FAST_FACTOR * steady), None)
    if fast is None:
        fast = len(times) - 1
    point.fast_call = fast
    point.first_fast_s = ends[fast] - t0


def _note_compile(
    point: protocol.ColdStartPointEvent, records: CompileRecords, marks: dict[str, int]
) -> None:
    """The first call's compile: its phases (what the rest of the call took is ``other``),
    cache hits and graphs."""
    from .compile_records import cache_counts, compile_phases, timed_since

    assert point.first_call_s is not None  # timed by now
    new = records.new()
    build_s = timed_since(marks, "compile_file") + timed_since(marks, "async_compile.wait")
    phases = compile_phases(new, build_s)
    if phases.get("cache load", 0.0) > 0 and phases.get("C++/Triton build", 0.0) == 0.0:
        # a cache hit still builds what the cache holds as source (C++ kernels on the CPU)
        moved = min(build_s, phases["cache load"])
        phases["cache load"] -= moved
        phases["C++/Triton build"] = moved
    point.phases = phases_with_other(phases, point.first_call_s)
    point.cache = cache_counts(new)
    point.graphs = sum(1 for m in new if getattr(m, "has_guarded_code", True))


def _save_artifacts(path: str, device: torch.device) -> None:
    """This process's compile artifacts saved at ``path`` (Mega-Cache), with what they are and
    where they were made in ``path + ".json"`` (or why there is nothing to carry)."""
    import torch

    from .environment import triton_version

    if not hasattr(torch.compiler, "save_cache_artifacts"):
        with open(path + ".json", "w", encoding="utf-8") as fh:
            json.dump({"missing": f"torch {torch.__version__} has no torch.compiler.save_cache_artifacts "
                       "(Mega-Cache): there is nothing to carry"}, fh)
        return
    saved = torch.compiler.save_cache_artifacts()
    if saved is not None:
        blob, info = saved
        with open(path, "wb") as fh:
            fh.write(blob)
        from .environment import _cpu_name

        names = {"device_name": torch.cuda.get_device_name(device) if device.type == "cuda"
                 else _cpu_name()}
        meta = {
            "artifacts": {k: len(v) for k, v in info.artifacts.items()},
            "environment": {
                "torch": torch.__version__, "triton": triton_version(),
                "python": sys.version.split()[0], "device_type": device.type,
                "cuda": torch.version.cuda, **names,
            },
        }
        with open(path + ".json", "w", encoding="utf-8") as fh:
            json.dump(meta, fh)
