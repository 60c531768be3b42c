"""Faults in the worker: compiler failure and out-of-memory are reported, the rest is kept."""

from __future__ import annotations

import os

import pytest

from compile_studio.core import protocol
from compile_studio.core.config import BenchmarkConfig
from compile_studio.jobs.session import RunOutcome, RunSession
from compile_studio.launchers.supervisor import WorkerLauncher
from compile_studio.results import RunStore, load_run


def run_config(
    config: dict, store: RunStore, env: dict | None = None
) -> tuple[RunOutcome, list[protocol.ErrorEvent]]:
    errors: list[protocol.ErrorEvent] = []

    def on_event(event: protocol.Event) -> None:
        if isinstance(event, protocol.ErrorEvent):
            errors.append(event)

    session = RunSession(
        BenchmarkConfig.from_dict(config), store, WorkerLauncher(env=env), on_event=on_event
    )
    return session.run(), errors


@pytest.mark.inductor
@pytest.mark.fresh_worker  # the worker is given another C++ compiler (CXX): read at its start
def test_compiler_failure_marks_variant_failed_keeps_others(tmp_path, tiny_config):
    """Inductor cannot find a C++ compiler: only the Inductor variant fails."""
    tiny_config.update(variants=["eager", "aot_eager", "default"], compile_cache="cold")
    env = dict(os.environ, CXX="/nonexistent/bin/g++")
    outcome, errors = run_config(tiny_config, RunStore(tmp_path), env)
    run = load_run(outcome.folder)
    assert run.status == "complete"
    failed = run.variants["default"]
    assert failed.status == "failed" and failed.error_kind == "compile_failed"
    assert "C++ compiler" in failed.error
    for name in ("eager", "aot_eager"):
        v = run.variants[name]
        assert v.status == "done" and v.samples.count("measure") == tiny_config["iterations"]
    assert [e.variant for e in errors] == ["default"]


def test_out_of_memory_reported_with_size(tmp_path, tiny_config):
    """A worker under a memory limit: the allocation fails, the message says so and how much."""
    tiny_config.update(layers="8192,8192,8192", batch_size=4096, variants=["eager"])
    env = dict(os.environ, COMPILE_STUDIO_WORKER_MEMORY_LIMIT=str(300 << 20))
    outcome, errors = run_config(tiny_config, RunStore(tmp_path), env)
    assert errors and errors[0].kind == "oom"
    msg = errors[0].message
    assert msg.startswith("out of memory on cpu")
    assert "tried to allocate 256.0 MiB" in msg and "need about" in msg
    run = load_run(outcome.folder)
    assert run.status == "failed" and "out of memory" in run.message


def test_oom_in_one_variant_keeps_the_others(tmp_path, tiny_config):
    """Interleaved variants live side by side: the third model no longer fits.

    Each model is 128 MiB (4096² fp32, two layers); the limit leaves room for
    two of them (and for the fp64 reference, built and freed before).
    """
    tiny_config.update(layers="4096,4096,4096", batch_size=8, rounds=2,
                       variants=["eager", "aot_eager", "default"], iterations=6, warmup=1)
    env = dict(os.environ, COMPILE_STUDIO_WORKER_MEMORY_LIMIT=str(420 << 20))
    outcome, errors = run_config(tiny_config, RunStore(tmp_path), env)
    run = load_run(outcome.folder)
    assert [(e.variant, e.kind) for e in errors] == [("default", "oom")]
    assert "out of memory" in run.variants["default"].error
    assert run.variants["default"].status == "failed"
    for name in ("eager", "aot_eager"):
        assert run.variants[name].samples.count("measure") == 6
