"""Start-up cost: the cold-start job with the tiny MLP under Inductor on the CPU, through the CLI.

One job of one round measures eager and the ``default`` variant cold, warm and
carried, each in a process of its own with cache folders the job makes fresh
(never the tests' shared Inductor cache); the same folder then reopens in
``show``. A cache file made for another torch is refused before anything is timed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from compile_studio.core.config import BenchmarkConfig
from compile_studio.results.records.cache_file import (
    MAGIC,
    CacheFileError,
    read_cache_file,
    write_cache_file,
)
from compile_studio.results.records.coldstart_record import load_coldstart, summarize

CLI = [sys.executable, "-m", "compile_studio.cli"]
FLAGS = ["--layers", "32,32,8", "--batch-size", "4", "--device", "cpu", "--variants", "eager,default"]


def cli(*args, timeout=600):
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout)


def only_folder(root: Path) -> Path:
    folders = [p for p in root.iterdir() if p.is_dir()]
    assert len(folders) == 1, folders
    return folders[0]


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    """One round of every start kind (the slow part: two Inductor compiles from empty caches)."""
    root = tmp_path_factory.mktemp("coldstart")
    cache = root / "mlp.cache"
    done = cli("coldstart", *FLAGS, "--start-rounds", "1", "--calls", "5", "--save-cache", str(cache),
               "--out", str(root / "jobs"))
    return done, only_folder(root / "jobs"), cache


def test_each_start_kind_is_measured_in_a_fresh_process_of_its_own(job):
    done, folder, _ = job
    assert done.returncode == 0, done.stderr[-3000:]
    record = load_coldstart(folder)
    assert record.status == "complete"
    by_start = {p.start: p for p in record.points}
    assert set(by_start) == {"eager", "cold", "warm", "carried"}
    assert all(p.error is None for p in record.points), [p.error for p in record.points]
    pids = [p.pid for p in record.points]
    assert len(set(pids)) == len(pids) and all(pids)
    for p in record.points:
        assert 0 < p.ready_s < p.first_result_s <= p.first_fast_s
        assert p.import_s < p.ready_s
    cold, warm = by_start["cold"], by_start["warm"]
    # the job made both caches: cold found nothing, warm found the cold start's graph
    assert cold.cache["fx_graph_misses"] >= 1 and cold.cache["fx_graph_hits"] == 0
    assert warm.cache["fx_graph_hits"] >= 1 and warm.cache["fx_graph_misses"] == 0
    assert cold.first_call_s > warm.first_call_s


def test_the_carried_start_loads_artifacts_into_a_cache_that_held_nothing_else(job):
    _, folder, _ = job
    carried = next(p for p in load_coldstart(folder).points if p.start == "carried")
    assert carried.files_before_load == 0
    # what torch.compiler.load_cache_artifacts said it put in place, and the hits that followed
    assert carried.loaded.get("inductor", 0) >= 1
    assert carried.cache["fx_graph_hits"] >= 1 and carried.cache["fx_graph_misses"] == 0
    assert carried.load_s is not None and carried.load_s >= 0


def test_phases_add_up_to_the_first_call_or_show_the_gap_as_other(job):
    _, folder, _ = job
    for p in load_coldstart(folder).points:
        if p.start == "eager":
            assert p.phases == {}
            continue
        assert p.phases.get("Dynamo tracing", 0) > 0
        total = sum(p.phases.values())
        assert abs(total - p.first_call_s) <= 0.10 * p.first_call_s + 1e-6, (p.phases, p.first_call_s)
        assert "other" in p.phases or total >= 0.9 * p.first_call_s
    cold = next(p for p in load_coldstart(folder).points if p.start == "cold")
    assert "AOT autograd" in cold.phases
    # Inductor generated code cold; how its time splits between its own codegen and the C++
    # build it waits for (all of it, on a busy machine) is not the point
    assert cold.phases.get("Inductor codegen", 0) + cold.phases.get("C++/Triton build", 0) > 0, cold.phases


def test_the_folder_reopens_in_show_with_break_even_per_start(job):
    _, folder, _ = job
    shown = cli("show", str(folder), timeout=120)
    assert shown.returncode == 0, shown.stderr
    for word in ("cold", "warm", "carried", "break-even", "Where the first call's time goes"):
        assert word in shown.stdout
    rows = {s.start: s for s in summarize(load_coldstart(folder))}
    assert rows["cold"].eager_first_result is not None and rows["cold"].call_ms is not None
    csv_lines = (folder / "coldstart.csv").read_text().splitlines()
    assert len(csv_lines) == 1 + 4 and csv_lines[0].startswith("round,variant,start")


def test_the_saved_cache_names_what_it_is_valid_for(job):
    import torch

    _, _, cache_path = job
    cache = read_cache_file(cache_path)
    assert cache.environment["torch"] == torch.__version__
    assert cache.environment["device_type"] == "cpu"
    assert cache.variant("default") is not None and cache.blobs["default"]
    assert cache.config["layers"] == "32,32,8"


def test_a_cache_file_for_another_torch_is_refused_before_anything_is_timed(tmp_path):
    config = BenchmarkConfig.from_dict({"layers": "32,32,8", "batch_size": 4, "device": "cpu",
                                        "variants": ["eager", "default"]})
    made = tmp_path / "elsewhere.cache"
    write_cache_file(made, {"torch": "1.0.0", "device_type": "cpu", "device_name": "another CPU"},
                     config.to_dict(), {"default": (b"not unpickled", {"inductor": 1})})
    done = cli("coldstart", *FLAGS, "--start-rounds", "1", "--calls", "3", "--load-cache", str(made),
               "--out", str(tmp_path / "jobs"), timeout=300)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "elsewhere.cache will not help" in done.stderr
    assert "made with torch 1.0.0" in done.stderr
    record = load_coldstart(only_folder(tmp_path / "jobs"))
    assert record.points == [] and record.status == "failed"


def test_a_damaged_or_foreign_cache_file_is_refused_from_its_header(tmp_path):
    config = {"layers": "32,32,8"}
    good = tmp_path / "a.cache"
    write_cache_file(good, {"torch": "2.0"}, config, {"default": (b"x" * 100, {})})
    damaged = tmp_path / "b.cache"
    data = bytearray(good.read_bytes())
    data[-1] ^= 1
    damaged.write_bytes(bytes(data))
    with pytest.raises(CacheFileError, match="sha256"):
        read_cache_file(damaged)
    foreign = tmp_path / "c.cache"
    foreign.write_bytes(b"\x80\x04pickle")
    with pytest.raises(CacheFileError, match="not a Compile Studio cache file"):
        read_cache_file(foreign)
    cut = tmp_path / "d.cache"
    cut.write_bytes(good.read_bytes()[:-10])
    with pytest.raises(CacheFileError, match="beyond the end"):
        read_cache_file(cut)
    header = json.loads(good.read_bytes()[len(MAGIC):].split(b"\n", 1)[0])
    assert header["variants"][0]["size"] == 100


def _measuring_processes(parent: int) -> list[int]:
    """Pids of the cold-start measuring processes that ``parent`` started, still alive."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if b"--coldstart-child" in argv and ppid == parent:
            found.append(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def test_a_stop_during_a_cold_compile_keeps_what_was_measured_and_leaves_no_process(tmp_path):
    import threading
    import time

    from compile_studio.jobs.coldstart_run import ColdStartRun, coldstart_request, new_coldstart

    config = BenchmarkConfig.from_dict({"layers": "32,32,8", "batch_size": 4, "device": "cpu",
                                        "variants": ["eager", "default"]})
    folder = new_coldstart(coldstart_request(config, rounds=1, calls=3), tmp_path)
    compiling = threading.Event()
    run: ColdStartRun

    def on_point(record) -> None:
        if record.points and record.points[-1].start == "eager":
            compiling.set()

    run = ColdStartRun(folder, on_point=on_point)
    ended = []
    thread = threading.Thread(target=lambda: ended.append(run.run()))
    thread.start()
    assert compiling.wait(180), "eager's process never reported"
    worker = run._worker
    assert worker is not None
    deadline = time.monotonic() + 60
    while not _measuring_processes(worker.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    started = _measuring_processes(worker.pid)
    assert started, "the cold start's process never started"
    run.request_stop()
    thread.join(60)
    assert ended and ended[0].stop_requested
    record = load_coldstart(folder.path)
    assert record.status == "stopped" and [p.start for p in record.points] == ["eager"]
    deadline = time.monotonic() + 15
    while any(_alive(p) for p in started) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_alive(p) for p in started)


def test_a_gpu_cache_file_is_checked_against_the_gpu_triton_and_cuda_it_would_run_on():
    from compile_studio.results.records.cache_file import (
        CachedVariant,
        CacheFile,
        cache_mismatches,
        environment_of,
    )

    config = BenchmarkConfig.from_dict({"layers": "32,32,8", "device": "cuda", "variants": ["eager", "default"]})
    made = {"torch": "2.13.0", "triton": "3.5.0", "python": "3.11.7", "device_type": "cuda",
            "device_name": "NVIDIA H100 80GB HBM3", "cuda": "12.8"}
    cache = CacheFile(made, config.to_dict(), [CachedVariant("default", 0, 1, "0" * 64)])
    hello = {"torch": "2.13.0", "triton": "3.5.0", "python": "3.11.7", "cuda": "12.8",
             "devices": ["cpu", "cuda:0"], "device_names": {"cpu": "x", "cuda:0": "NVIDIA H100 80GB HBM3"}}
    assert cache_mismatches(cache, environment_of(hello, "cuda"), config) == []
    assert cache_mismatches(cache, environment_of(hello, "auto"), config) == []
    other = {**hello, "triton": "3.4.0", "device_names": {"cuda:0": "NVIDIA H200"}}
    reasons = cache_mismatches(cache, environment_of(other, "cuda"), config)
    assert any("NVIDIA H200" in r for r in reasons) and any("Triton 3.4.0" in r for r in reasons)
    bigger = BenchmarkConfig.from_dict({**config.to_dict(), "layers": "64,64,8"})
    assert any("another configuration (layers" in r for r in cache_mismatches(cache, environment_of(hello, "cuda"), bigger))
