"""Checks, figures and the three files: what the stages write as they go, saved after every step."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tarfile
import threading
import time
import traceback
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

JSON_NAME = "gpu_check.json"
LOG_NAME = "gpu_check.log"
TAR_NAME = "runs.tar.gz"
#: The log stops taking worker lines past this size (max-autotune is talkative).
LOG_CAP_BYTES = 8 << 20

PASS, FAIL, SKIP = "PASS", "FAIL", "SKIP"
EXIT_OK, EXIT_FAILED, EXIT_DEADLINE = 0, 1, 2

CPU_TIMING = "on the CPU timing comparisons are reported, not asserted"
CUDA_ONLY = "CUDA only (--device cpu)"
NO_NUMPY = "numpy is not installed"


@dataclass
class Check:
    """One check: its id, what it asks, PASS / FAIL / SKIP, the figure behind it and why."""

    id: str
    name: str
    stage: str
    status: str
    figure: str = ""
    detail: str = ""
    #: asserted only on CUDA: on the CPU it is skipped (with its figure where there is one)
    cuda_only: bool = False


def _json_default(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, (set, frozenset, tuple)):
        return sorted(value) if isinstance(value, (set, frozenset)) else list(value)
    if hasattr(value, "value"):
        return value.value
    return str(value)


class Report:
    """Prints, logs and saves as the stages go; owns the deadline's last word."""

    def __init__(self, out: Path, args: dict[str, Any], deadline_s: float, version: str = ""):
        out.mkdir(parents=True, exist_ok=True)
        self.out = out
        self.lock = threading.RLock()
        self.t0 = time.monotonic()
        self.deadline_s = deadline_s
        self.log = open(out / LOG_NAME, "w", encoding="utf-8", buffering=1)
        self.log_bytes = 0
        self.log_cut = False
        self.checks: list[Check] = []
        self.stage = ""
        self.closed = False
        self.deadline_hit = False
        self.runs_root: Path | None = None
        #: the app run in progress (a RunSession): the deadline stops it
        self.active_session: Any = None
        self.session_idle = threading.Event()
        self.session_idle.set()
        self.data: dict[str, Any] = {
            "script": "bench/gpu_check",
            "app_version": version,
            "args": args,
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "status": "running",
            "deadline_s": deadline_s,
            "environment": {},
            "stages": {},
            "checks": [],
        }

    # -- time ------------------------------------------------------------------------------
    def elapsed(self) -> float:
        return time.monotonic() - self.t0

    def left(self) -> float:
        return self.deadline_s - self.elapsed()

    # -- output ----------------------------------------------------------------------------
    def say(self, text: str = "") -> None:
        with self.lock:
            print(text, flush=True)
            self._log(text)

    def _log(self, text: str) -> None:
        try:
            self.log.write(text + "\n")
            self.log_bytes += len(text) + 1
        except ValueError:
            pass

    def worker_line(self, tag: str, line: str) -> None:
        with self.lock:
            if self.log_bytes > LOG_CAP_BYTES:
                if not self.log_cut:
                    self._log(f"[{tag}] … the log is full; further worker lines are left out")
                    self.log_cut = True
                return
            self._log(f"[{tag}] {line}")

    def log_traceback(self) -> None:
        with self.lock:
            self._log(traceback.format_exc())

    # -- checks ----------------------------------------------------------------------------
    def _add(self, check: Check) -> None:
        with self.lock:
            if self.closed:
                return
            self.checks.append(check)
            text = f"{check.status} {check.id}: {check.name}"
            if check.figure:
                text += f" — {check.figure}"
            if check.detail:
                text += f" [{check.detail}]"
            self.say(text)
        self.save()

    def check(
        self, id: str, name: str, ok: bool, figure: str = "", detail: str = "",
        cuda_only: bool = False,
    ) -> bool:
        self._add(Check(id, name, self.stage, PASS if ok else FAIL, figure, detail, cuda_only))
        return ok

    def skip(
        self, id: str, name: str, reason: str, figure: str = "", cuda_only: bool = False
    ) -> None:
        self._add(Check(id, name, self.stage, SKIP, figure, reason, cuda_only))

    def judge(
        self, cuda: bool, id: str, name: str, ok: bool, figure: str, reason_on_cpu: str
    ) -> None:
        """A check asserted on CUDA only; on the CPU its figure is reported and it is skipped."""
        if cuda:
            self.check(id, name, ok, figure, cuda_only=True)
        else:
            self.skip(id, name, reason_on_cpu, figure, cuda_only=True)

    # -- stages ----------------------------------------------------------------------------
    @contextlib.contextmanager
    def stage_of(self, name: str) -> Iterator[dict[str, Any]]:
        """One stage: its figures (saved with it), its time, an exception as a failed check."""
        figures: dict[str, Any] = {}
        entry: dict[str, Any] = {"status": "running", "start_s": round(self.elapsed(), 2),
                                 "figures": figures}
        with self.lock:
            self.stage = name
            self.data["stages"][name] = entry
        self.say(f"\n== {name}  (t = {self.elapsed():.0f} s, {self.left():.0f} s left)")
        self.save()
        try:
            yield figures
            entry["status"] = "done"
        except Exception as exc:  # noqa: BLE001 - a broken stage is a failed check, the rest go on
            entry["status"] = "error"
            entry["error"] = f"{type(exc).__name__}: {exc}"[:2000]
            self.log_traceback()
            self.check(f"{name}.ran", f"stage {name} ran to its end", False,
                       f"{type(exc).__name__}: {str(exc)[:300]}")
        finally:
            entry["elapsed_s"] = round(self.elapsed() - entry["start_s"], 2)
            self.say(f"   ({name}: {entry['elapsed_s']:.1f} s)")
            self.save()

    def skip_stage(
        self, name: str, reason: str, checks: list[tuple[str, str]] | None = None,
        cuda_only: bool = False,
    ) -> None:
        """A stage not run: recorded with ``reason``, and each of its ``checks`` (id, name)
        skipped with it (by default one, ``<name>.ran``)."""
        with self.lock:
            self.stage = name
            self.data["stages"][name] = {"status": "skipped", "reason": reason}
        self.say(f"\n== {name}: skipped, {reason}")
        for id_, text in checks or [(f"{name}.ran", f"stage {name} ran")]:
            self.skip(id_, text, reason, cuda_only=cuda_only)

    @contextlib.contextmanager
    def guard(self, id: str, name: str) -> Iterator[None]:
        """One part of a stage: an exception in it is a failed check, and the stage goes on."""
        try:
            yield
        except Exception as exc:  # noqa: BLE001
            self.log_traceback()
            self.check(id, name, False, f"{type(exc).__name__}: {str(exc)[:300]}", cuda_only=True)
            with contextlib.suppress(Exception):
                import torch

                if torch.cuda.is_available():
                    torch.cuda.synchronize()

    def may_start(self, name: str, needs_s: float, optional: bool = False) -> bool:
        """False (and the stage recorded as left out) when less time is left than it needs.

        A stage left out makes the exit status 2, unless it is ``optional``: its
        caller then skips its checks, saying why.
        """
        left = self.left()
        if left >= needs_s:
            return True
        reason = f"deadline: {left:.0f} s left, the stage needs about {needs_s:.0f} s"
        with self.lock:
            if not optional:
                self.deadline_hit = True
            self.data["stages"][name] = {"status": "left out", "reason": reason}
        self.say(f"\n== {name}: left out, {left:.0f} s left and it needs about {needs_s:.0f} s")
        self.save()
        return False

    # -- files -----------------------------------------------------------------------------
    def counts(self) -> dict[str, int]:
        out = {PASS: 0, FAIL: 0, SKIP: 0}
        for c in self.checks:
            out[c.status] += 1
        return out

    def save(self, status: str | None = None) -> None:
        with self.lock:
            if self.closed and status is None:
                return
            if status is not None:
                self.data["status"] = status
            self.data["elapsed_s"] = round(self.elapsed(), 2)
            self.data["deadline_hit"] = self.deadline_hit
            self.data["checks"] = [asdict(c) for c in self.checks]
            self.data["summary"] = self.counts()
            path = self.out / JSON_NAME
            tmp = self.out / f".{JSON_NAME}.tmp"
            tmp.write_text(json.dumps(self.data, indent=1, default=_json_default), encoding="utf-8")
            os.replace(tmp, path)

    def pack_runs(self) -> None:
        """The run folders so far as one tarball (replaced whole each time)."""
        if self.runs_root is None or not self.runs_root.is_dir():
            return
        with self.lock:
            tmp = self.out / f".{TAR_NAME}.tmp"
            with tarfile.open(tmp, "w:gz") as tar:
                tar.add(self.runs_root, arcname="runs")
            os.replace(tmp, self.out / TAR_NAME)

    # -- the end ---------------------------------------------------------------------------
    def summary_lines(self) -> list[str]:
        lines = ["", "== checks"]
        for c in self.checks:
            lines.append(f"{c.status} {c.id}" + (f" — {c.figure}" if c.figure else ""))
        n = self.counts()
        lines.append(f"gpu_check: {n[PASS]} PASS, {n[FAIL]} FAIL, {n[SKIP]} SKIP "
                     f"in {self.elapsed():.0f} s" + ("; the deadline hit" if self.deadline_hit else ""))
        return lines

    def exit_code(self) -> int:
        if self.deadline_hit:
            return EXIT_DEADLINE
        return EXIT_FAILED if self.counts()[FAIL] else EXIT_OK

    def final_status(self) -> str:
        if self.deadline_hit:
            return "deadline"
        return "failed" if self.counts()[FAIL] else "passed"

    def close(self, status: str) -> int:
        with self.lock:
            for line in self.summary_lines():
                self.say(line)
            code = self.exit_code()
            names = sorted(p.name for p in self.out.iterdir() if not p.name.startswith("."))
            self.say(f"files in {self.out}: {', '.join(names)}")
            self.say(f"exit status {code}")
            self.save(status)
            self.closed = True
            self.log.flush()
        return code

    def expire(self) -> None:
        """The deadline: stop the worker, keep what exists, leave with status 2."""
        got = self.lock.acquire(timeout=10)
        try:
            self.deadline_hit = True
            stage = self.data["stages"].get(self.stage)
            if stage is not None and stage.get("status") == "running":
                stage["status"] = "cut short by the deadline"
            self.say(f"\n!! deadline of {self.deadline_s:.0f} s reached in stage {self.stage}: "
                     "stopping, saving what there is")
            session = self.active_session
        finally:
            if got:
                self.lock.release()
        if session is not None:
            session.request_stop("the gpu_check deadline")
            self.session_idle.wait(6.0)
        try:
            self.pack_runs()
        except Exception as exc:  # noqa: BLE001
            self.say(f"   could not pack the runs: {exc}")
        code = self.close("deadline")
        sys.stdout.flush()
        os._exit(code)
