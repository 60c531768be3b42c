"""The tool out of its own measurement: the timing thread gets a core, the supervisor another."""

from __future__ import annotations

import os

import pytest

from compile_studio.core import affinity
from compile_studio.core.config import BenchmarkConfig
from compile_studio.jobs.session import RunSession
from compile_studio.results import RunStore, load_run


def test_the_plan_gives_the_timing_thread_the_last_core_and_the_supervisor_the_first():
    split = affinity.plan((3, 0, 2, 1), env={})
    assert (split.timing_cpu, split.supervisor_cpus, split.cpus) == (3, (0,), (0, 1, 2, 3))
    assert split.worker_env() == {affinity.TIMING_CPU_ENV: "3", affinity.WORKER_CPUS_ENV: "0,1,2,3"}
    assert affinity.plan((5,), env={}) is None  # one core: nothing to split
    assert affinity.plan((0, 1), env={affinity.PIN_ENV: "0"}) is None  # turned off


def test_only_one_run_of_a_process_holds_the_cores():
    split = affinity.CoreSplit(timing_cpu=1, supervisor_cpus=(0,), cpus=(0, 1))
    before = os.sched_getaffinity(0)
    with affinity.supervising(split) as first, affinity.supervising(split) as second:
        assert first is split and second is None
    assert os.sched_getaffinity(0) == before


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two cores")
def test_a_local_run_pins_its_timing_thread_records_the_split_and_gives_the_cores_back(tmp_path, tiny_config):
    before = os.sched_getaffinity(0)
    config = BenchmarkConfig.from_dict({**tiny_config, "variants": ["eager"]})
    outcome = RunSession(config, RunStore(tmp_path)).run()
    assert outcome.status == "complete"
    last = max(before)
    run = load_run(outcome.folder)
    assert run.measurement["core_split"].startswith(f"timing thread on CPU {last}, window/CLI on CPU {min(before)}")
    assert run.measurement["cpu_pinning"].startswith(f"timing thread alone on CPU {last};")
    assert run.measurement["torch_threads"] == outcome.run.measurement["torch_threads"] >= 1
    assert os.sched_getaffinity(0) == before  # the supervising process has every core back
