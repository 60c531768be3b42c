"""Workers on an SSH host or in Slurm job steps: launchers built from a target (no Qt, no torch).

A :class:`RemoteLauncher` is a :class:`~compile_studio.launchers.supervisor.WorkerLauncher`
whose command line reaches the target through the system ``ssh`` client
(``-T``, BatchMode: no terminal, so the JSON lines stay clean) and/or ``srun``
(a job step streams stdin and stdout). Before the worker starts,
:meth:`RemoteLauncher.prepare` asks the remote Python whether it has torch and
the worker bundle (:mod:`compile_studio.launchers.worker_bundle`), and copies the bundle
when it is missing, verified by its sha256. The cache folder and the bundle are
used only when they belong to the user and no one else can write them. The
worker starts with ``python -c`` (never ``-m``, which imports from the current
folder): the bytes it runs are the ones whose sha256 it checked, from a private
copy, and nothing else of the package is importable (see :data:`BOOT`).

Nothing of a target reaches a shell on this machine: commands are argument
lists; a Slurm target without ``via`` hands its ``python`` and ``preamble`` to
``srun`` as the job step's script, and its side commands (the check, the copy)
run with this Python, the job's torch then checked by the worker itself.

Stopping: ``stop`` on stdin, then stdin is closed; a worker still there after
that is ended through a second command: its process group (from ``hello``)
is killed over ``ssh``, or its job step is ``scancel``-ed. Whatever the end,
:meth:`RemoteLauncher.cleanup` makes sure nothing of the run is left running.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shlex
import subprocess
import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..core import protocol
from ..core.model_specs import factory_file
from .gpu_pool import GpuPool, PooledGpu
from .gpu_pool import LocalGpuLauncher as LocalGpuLauncher
from .remote_programs import BOOT, CHECK, INSTALL, REMOTE_CACHE_ENV, local_cache, remote_cache
from .supervisor import WorkerLauncher, WorkerProcess, WorkerStartFailed
from .target_kinds import LaunchPlan, target_kind
from .targets import LOCAL_TARGET, Target, Targets, load_targets
from .worker_bundle import WorkerBundle, worker_bundle

#: The largest factory file shipped to a remote with a run.
MAX_FACTORY_BYTES = 16 * 2**20
#: How long a side command (check, copy, kill, squeue) may take.
SIDE_COMMAND_TIMEOUT_S = 60.0
RUN_TAG_FLAG = "--run-tag"


def ssh_argv(target: Target) -> list[str]:
    """``ssh`` and its options for an SSH target; the remote command follows."""
    argv = [
        "ssh", "-T",
        "-o", "BatchMode=yes",
        "-o", "ServerAliveInterval=5",
        "-o", "ServerAliveCountMax=3",
    ]
    if target.port:
        argv += ["-p", str(target.port)]
    if target.user:
        argv += ["-l", target.user]
    if target.identity:
        argv += ["-i", os.path.expanduser(target.identity)]
    argv += list(target.ssh_options)
    argv += ["--", target.host]
    return argv


def gres(target: Target) -> str | None:
    """The ``--gres`` value of a Slurm target (``gpu:2``, ``gpu:a100:1``); None without GPUs."""
    if target.gpus <= 0:
        return None
    return f"gpu:{target.gpu_type + ':' if target.gpu_type else ''}{target.gpus}"


def srun_argv(target: Target, job_name: str) -> list[str]:
    """``srun`` for one job step of a Slurm target (the step's command follows)."""
    argv = ["srun", f"--job-name={job_name}", "--ntasks=1", "--input=all", "--unbuffered"]
    if target.partition:
        argv.append(f"--partition={target.partition}")
    spec = gres(target)
    if spec:
        argv.append(f"--gres={spec}")
    if target.time_limit:
        argv.append(f"--time={target.time_limit}")
    if target.account:
        argv.append(f"--account={target.account}")
    return argv + list(target.srun_flags)


@dataclass(frozen=True)
class RemoteLauncher(PooledGpu, WorkerLauncher):
    """A worker on an SSH host or in a Slurm job step (see the module's notes).

    ``login`` is the SSH target commands go through (an SSH target itself, or
    a Slurm target's login node); None runs them on this machine (Slurm
    here). ``gpu`` pins the worker to one GPU of a multi-GPU host
    (``CUDA_VISIBLE_DEVICES``); Slurm's ``--gres`` sets it in a job step.
    """

    target: Target = LOCAL_TARGET
    login: Target | None = None
    bundle: WorkerBundle | None = None
    gpu: int | None = None
    pool: GpuPool | None = None
    run_tag: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    #: what :meth:`prepare` learnt of the remote (host, Python, …)
    found: dict[str, Any] = field(default_factory=dict, compare=False)

    # -- words -------------------------------------------------------------------------------
    def describe(self) -> str:
        t = self.target
        if t.kind == "ssh":
            return f"SSH target {t.name!r} (host {t.host})"
        login = f" via {self.login.name!r} (host {self.login.host})" if self.login else ""
        part = f", partition {t.partition}" if t.partition else ""
        return f"Slurm target {t.name!r}{login}{part}"

    @property
    def job_name(self) -> str:
        return f"compile-studio-{self.run_tag}"

    def active_bundle(self) -> WorkerBundle:
        return self.bundle or worker_bundle()

    # -- command lines -----------------------------------------------------------------------
    def shell(self, script: str) -> list[str]:
        """The command line that runs the shell ``script`` on the login target, over ``ssh``.

        Only for a target reached through ``ssh``: on this machine nothing of a target
        runs through a shell (its commands are argument lists).
        """
        if self.login is None:
            raise ValueError(f"{self.describe()} runs its commands on this machine, not through a shell")
        return [*ssh_argv(self.login), "sh -c " + shlex.quote(script)]

    def side_argv(self, argv: list[str]) -> list[str]:
        """The command line that runs ``argv`` where this target's side commands run."""
        if self.login is None:
            return list(argv)
        return [*ssh_argv(self.login), shlex.join(argv)]

    def _python(self) -> str:
        if self.target.python:
            return self.target.python
        if self.login is None:
            return shlex.quote(sys.executable)  # Slurm on this machine: this Python
        return "python3"

    def _with_preamble(self, script: str) -> str:
        pre = self.target.preamble.strip()
        return f"{pre}\n{script}" if pre else script

    def _program(self, code: str, *args: str) -> list[str]:
        """The command line that runs the Python program ``code`` with the cache folder and
        ``args`` where side commands run: over ``ssh`` with the target's Python and
        preamble; on this machine (Slurm without ``via``) with this Python and no shell,
        so the target's ``python`` and ``preamble`` reach only its job steps."""
        if self.login is None:
            return [sys.executable, "-c", code, local_cache(), *args]
        words = " ".join([self._python(), "-c", shlex.quote(code), remote_cache(),
                          *(shlex.quote(a) for a in args)])
        return self.shell(self._with_preamble(words))

    def checks_target_python(self) -> bool:
        """Whether :meth:`prepare` asks the Python the worker will run on (else torch is
        asked for by the worker itself, in its job step)."""
        if self.login is not None:
            return True
        return not self.target.preamble.strip() and self.target.python in (
            "", sys.executable, shlex.quote(sys.executable))

    def worker_script(self, *args: str) -> str:
        """The shell script that starts the worker where it runs (see :data:`BOOT`)."""
        bundle = self.active_bundle()
        env = ["PYTHONUNBUFFERED=1"]
        gpu = self.visible_gpu()
        if gpu is not None:
            env.append(f"CUDA_VISIBLE_DEVICES={gpu}")
        command = " ".join(
            [*env, "exec", self._python(), "-c", shlex.quote(BOOT), remote_cache(),
             shlex.quote(bundle.file_name), bundle.sha256,
             *(shlex.quote(a) for a in args), f"{RUN_TAG_FLAG}={self.run_tag}"]
        )
        return self._with_preamble(command)

    def argv(self, *args: str) -> list[str]:
        self.found["started"] = True
        script = self.worker_script(*args)
        if self.target.kind == "slurm":
            # the script is the job step's: on this machine only srun sees it
            step = [*srun_argv(self.target, self.job_name), "sh", "-c", script]
            return step if self.login is None else self.shell(shlex.join(step))
        return self.shell(script)

    # -- side commands -----------------------------------------------------------------------
    def _side(self, argv: list[str], data: bytes | None = None,
              timeout: float = SIDE_COMMAND_TIMEOUT_S) -> subprocess.CompletedProcess[bytes]:
        try:
            return subprocess.run(
                argv, input=data if data is not None else b"",
                capture_output=True, timeout=timeout, cwd=_start_folder(),
                env=self.environment(),
            )
        except FileNotFoundError as exc:
            raise WorkerStartFailed(f"{self.describe()}: {exc.filename or argv[0]} is not installed") from None
        except subprocess.TimeoutExpired:
            raise WorkerStartFailed(f"{self.describe()} did not answer within {timeout:.0f} s") from None

    def _unreachable(self, proc: subprocess.CompletedProcess[bytes], doing: str) -> WorkerStartFailed:
        err = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        tail = err[-1] if err else f"exit code {proc.returncode}"
        if proc.returncode == 255 and self.login is not None:
            return WorkerStartFailed(f"cannot reach {self.describe()} over ssh: {tail}")
        if proc.returncode == 127:
            return WorkerStartFailed(
                f"{self.describe()}: the Python {self._python()!r} was not found there ({tail})"
            )
        return WorkerStartFailed(f"{self.describe()}: {doing} failed: {tail}")

    def prepare(self, on_status: Callable[[str], None] | None = None) -> None:
        """Check the remote Python and torch, and copy the worker bundle if it is not there.

        Raises WorkerStartFailed naming the target and what is missing, or the cache
        folder and why it is not used (another user's, or writable by others).
        """
        bundle = self.active_bundle()
        proc = self._side(self._program(CHECK, bundle.file_name, bundle.sha256))
        found = _last_json(proc.stdout)
        if proc.returncode != 0 or found is None:
            raise self._unreachable(proc, "checking the remote Python")
        if not self.checks_target_python():
            found["torch"] = None  # this machine's Python is not the job's: the worker says
        self.found.update(found)
        host = found.get("host", "?")
        if found.get("unsafe"):
            raise WorkerStartFailed(
                f"{self.describe()}: refusing to run the worker on host {host}: {found['unsafe']}. "
                f"Only a folder of yours that no one else can write is used: fix its owner and "
                f"mode, or set {REMOTE_CACHE_ENV} to another folder"
            )
        python = f"Python {found.get('python', '?')} at {found.get('executable', '?')}"
        if found.get("torch") is False:
            raise WorkerStartFailed(
                f"{self.describe()}: host {host} has no torch for {python}; install torch "
                "there, or set the target's Python (or preamble) to one that has it"
            )
        if not found.get("bundle"):
            self._install(bundle, host, on_status)
        self._take_gpu()

    def _install(self, bundle: WorkerBundle, host: str,
                 on_status: Callable[[str], None] | None) -> None:
        if on_status is not None:
            on_status(f"copying the worker ({len(bundle.data) // 1024} KiB) to {host}")
        proc = self._side(self._program(INSTALL, bundle.file_name, bundle.sha256), data=bundle.data)
        if proc.returncode != 0 or b"installed" not in proc.stdout:
            raise self._unreachable(proc, "copying the worker")

    def worker_config(self, config: dict[str, Any]) -> dict[str, Any]:
        """A custom model's factory file travels with the run: copied (by sha256) into the
        remote cache, and the worker's config names that copy. A factory named as a module
        (``package.module:make``) must be importable there."""
        if config.get("model") != "custom":
            return config
        spec = str(config.get("factory") or "")
        path = factory_file(spec)
        if path is None:
            return config
        try:
            if path.stat().st_size > MAX_FACTORY_BYTES:
                raise WorkerStartFailed(f"the factory file {path} is larger than {MAX_FACTORY_BYTES // 2**20} MiB")
            data = path.read_bytes()
        except OSError as exc:
            raise WorkerStartFailed(f"cannot read the factory file {path}: {exc.strerror or exc}") from None
        sha = hashlib.sha256(data).hexdigest()
        name = f"factory-{sha[:16]}-{path.name}"
        proc = self._side(self._program(INSTALL, name, sha), data=data)
        if proc.returncode != 0 or b"installed" not in proc.stdout:
            raise self._unreachable(proc, "copying the factory file")
        cache = self.found.get("cache")
        if not isinstance(cache, str) or not cache:
            raise WorkerStartFailed(f"{self.describe()}: the remote cache folder is not known")
        return {**config, "factory": f"{cache}/{name}:{spec.rsplit(':', 1)[1]}"}

    def waits_in_queue(self) -> bool:
        return self.target.kind == "slurm"

    def queue_state(self) -> str | None:
        """``queued on partition P, reason: R`` while the job step waits; None otherwise."""
        if self.target.kind != "slurm":
            return None
        try:
            proc = subprocess.run(
                self.side_argv(["squeue", "-h", "-n", self.job_name, "-o", "%i|%T|%r|%P"]),
                capture_output=True, timeout=15, cwd=_start_folder(), env=self.environment(),
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        for line in proc.stdout.decode("utf-8", "replace").splitlines():
            parts = line.strip().split("|")
            if len(parts) == 4 and parts[1] == "PENDING":
                return f"queued on partition {parts[3]}, reason: {parts[2]}"
        return None

    def end_remote(self, hello: protocol.HelloEvent | None) -> None:
        """End the run's remote processes: scancel its step, or kill its process group."""
        if self.target.kind == "slurm":
            cancels = [["scancel", f"--name={self.job_name}"]]
            if hello is not None and hello.slurm_job_id:
                job = _slurm_id(hello.slurm_job_id)
                step = _slurm_id(hello.slurm_step_id) if hello.slurm_step_id else ""
                if job:
                    cancels.append(["scancel", f"{job}{'.' + step if step else ''}"])
            if self.login is None:
                for argv in cancels:
                    self._quiet(argv)
            else:
                self._quiet(self.shell("".join(f"{shlex.join(a)} 2>/dev/null; " for a in cancels) + "true"))
            return
        groups = []
        if hello is not None and hello.pgid > 1:
            groups.append(str(int(hello.pgid)))
        # the worker's group as the tag finds it (a worker stopped before its hello)
        tagged = f"$(ps -o pgid= -p \"$(pgrep -f -- '{RUN_TAG_FLAG}={self.run_tag}' | head -n1)\" 2>/dev/null)"
        script = (
            f"for g in {' '.join(groups)} {tagged}; do "
            "g=$(echo $g | tr -d ' '); [ -n \"$g\" ] && [ \"$g\" -gt 1 ] || continue; "
            "if pgrep -g \"$g\" -f 'compile_studio|torch' >/dev/null; then "
            "kill -TERM -- -\"$g\" 2>/dev/null; sleep 0.3; kill -KILL -- -\"$g\" 2>/dev/null; fi; "
            "done; true"
        )
        self._quiet(self.shell(script))

    def _quiet(self, argv: list[str]) -> None:
        try:
            subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True,
                           timeout=15, cwd=_start_folder(), env=self.environment())
        except (OSError, subprocess.TimeoutExpired):
            pass

    def stop_worker(self, worker: WorkerProcess, hello: protocol.HelloEvent | None) -> None:
        """``stop``, close stdin; a worker still there after 1.5 s is ended remotely, then here."""
        worker.request_stop()
        worker.close_stdin()
        try:
            worker.proc.wait(1.5)
        except subprocess.TimeoutExpired:
            self.end_remote(hello)
        worker.stop(grace_s=1.0, term_s=1.0)

    def cleanup(self, hello: protocol.HelloEvent | None) -> None:
        """After the run: nothing of it left running remotely; its GPU is free again."""
        try:
            if self.found.pop("started", False):
                self.end_remote(hello)
        finally:
            self._give_gpu_back()

    def lost_connection(self, worker: WorkerProcess) -> str | None:
        """Words for a dropped connection (ssh's exit code 255), else None."""
        if self.login is not None and worker.returncode == 255:
            return f"the connection to {self.describe()} was lost ({worker.exit_description()})"
        return None

    def explain(self, event: protocol.Event) -> protocol.Event:
        """Events as seen from here: the target in ``hello``, the host in run-level errors."""
        if isinstance(event, protocol.HelloEvent):
            env = dict(event.environment)
            env.setdefault("host", event.host or self.found.get("host", ""))
            env["target"] = self.target.name
            env["target_kind"] = self.target.kind
            if self.target.kind == "slurm" and self.target.partition:
                env["slurm_partition"] = self.target.partition
            return dataclasses.replace(event, environment=env)
        if isinstance(event, protocol.ErrorEvent) and event.variant is None:
            host = self.found.get("host")
            where = self.describe() + (f", host {host}" if host else "")
            return dataclasses.replace(event, message=f"on {where}: {event.message}")
        return event


def _slurm_id(text: object) -> str:
    value = str(text).strip()
    return value if value.isdigit() else ""


def _last_json(data: bytes) -> dict[str, Any] | None:
    for line in reversed(data.decode("utf-8", "replace").splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                value = json.loads(line)
            except ValueError:
                return None
            return value if isinstance(value, dict) else None
    return None


def _start_folder() -> str:
    from .supervisor import safe_start_folder

    return safe_start_folder()


# -- targets to launchers and sessions -------------------------------------------------------

def launcher_for(
    target: Target | str,
    targets: Targets | None = None,
    index: int | None = None,
    bundle: WorkerBundle | None = None,
    pool: GpuPool | None = None,
) -> WorkerLauncher:
    """The launcher of one worker on ``target`` (a name is looked up in ``targets``), as its kind makes it.

    On a target whose kind hands out GPUs (this machine, an SSH host) and
    that lists ``gpu_ids``, the worker sees one GPU (``CUDA_VISIBLE_DEVICES``):
    the one ``pool`` hands out while it runs, or else
    ``gpu_ids[index % len(gpu_ids)]`` for a sweep point's ``index``. On Slurm
    every worker is its own job step, whose ``--gres`` gives it its GPUs.
    Raises KeyError for an unknown name and ValueError for a target that
    cannot be used (a Slurm target whose login target is unusable).
    """
    if isinstance(target, str):
        targets = targets if targets is not None else load_targets()
        target = targets.get(target)
    try:
        kind = target_kind(target.kind)
    except KeyError:
        raise ValueError(f"target {target.name!r}: no kind {target.kind!r} is known here") from None
    gpu = None
    if kind.hands_out_gpus and target.gpu_ids and pool is None and index is not None:
        gpu = target.gpu_ids[index % len(target.gpu_ids)]
    if kind.hands_out_gpus and not target.gpu_ids:
        pool = None
    plan = LaunchPlan(targets=targets, index=index, bundle=bundle, pool=pool, gpu=gpu)
    return kind.make_launcher(target, plan)


def ssh_launcher(target: Target, plan: LaunchPlan) -> RemoteLauncher:
    """An SSH host's worker (the ``ssh`` kind's launcher)."""
    return RemoteLauncher(target=target, login=target, bundle=plan.bundle, gpu=plan.gpu, pool=plan.pool)


def slurm_launcher(target: Target, plan: LaunchPlan) -> RemoteLauncher:
    """A Slurm job step's worker, through the login node ``via`` names (the ``slurm`` kind's launcher)."""
    login = None
    if target.via:
        targets = plan.targets if plan.targets is not None else load_targets()
        try:
            login = targets.get(target.via)
        except KeyError as exc:
            raise ValueError(f"target {target.name!r}: {exc.args[0]}") from None
        if login.kind != "ssh":
            raise ValueError(f"target {target.name!r}: via {target.via!r} is not an SSH target")
    return RemoteLauncher(target=target, login=login, bundle=plan.bundle)
