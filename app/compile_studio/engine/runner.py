"""The timed loop: builds each variant, compiles it, warms it up, measures it in rounds.

Measurement runs in rounds: with R rounds every variant's timed calls are
split into R blocks run in alternating order (A B A B …), so drift and load
changes hit every variant alike and show as spread between rounds. Before
the rounds: the fp64 reference, each variant's first call (compile time,
reported on its own), then — every compile done, the timing thread pinned,
the harness floor taken — the warm-up of all variants together, alternating
(a number of calls each and a minimum time in all), so round 1 starts with
the clocks already up. After them, outside any timed window: a steady-state
call checked against the first, the correctness verdict (for training, a
fixed number of steps from the same starting point compared with eager's),
a pipelined throughput figure, and the variant's own peak memory.

The timing thread is pinned to its core only while nothing compiles: the
processes and threads a compile starts (Inductor's compile workers, the C++
compiler) inherit the affinity of the thread that starts them.

Reports everything through an :class:`EventSink` (protocol events); holds no
state a supervisor needs after the fact. Pure torch, no Qt.

The steps around the loop live in modules of their own and take the runner
(its :class:`~.run_state.RunState`) as their first argument: the first call
in :mod:`.first_call`, the randomness check in :mod:`.randomness`, the checks
after the timed window in :mod:`.finish`; the pinning in :mod:`.pinning`.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from typing import Any

import torch

from ..core import protocol
from ..core.config import BenchmarkConfig
from ..core.variants import is_eager
from . import checks
from .cache_flush import CacheFlush
from .clocks import clock_change
from .finish import drift_steps, finish_variant
from .first_call import compile_threads, dynamo_counts, prepare_variant
from .randomness import RANDOMNESS_TEXT, detect_randomness, use_eager_random_numbers
from .run_errors import RunFailed, Stopped

# the worker imports classify_error from here
from .run_errors import classify_error as classify_error
from .run_state import RunState, apply_dynamo_config, apply_precision
from .timing import no_gc, settle
from .unpinned import time_unpinned
from .variant import Variant, reference_output
from .workloads import (
    Workload,
    batch_of,
    build_workload,
    conversions,
    count_flops,
    describe_inputs,
    dtype_name,
    lowest_precision,
    model_dtype,
    move_inputs,
    named_inputs,
)


def make_input(config: BenchmarkConfig) -> torch.Tensor:
    """The first input (fp32, on the CPU) of the config's model, drawn from its seed."""
    return build_workload(config).inputs[0]


def round_blocks(iterations: int, rounds: int) -> list[int]:
    """Timed calls per round: ``iterations`` split as evenly as possible."""
    rounds = max(1, min(rounds, iterations))
    base, extra = divmod(iterations, rounds)
    return [base + (1 if r < extra else 0) for r in range(rounds)]


class BenchmarkRunner(RunState):
    """Runs one validated :class:`BenchmarkConfig` and reports through a sink."""

    # -- public -----------------------------------------------------------
    def run(self) -> protocol.RunStatus:
        """Run every variant: ``complete``, ``stopped``, or ``failed`` (nothing could run)."""
        cfg = self.config
        apply_precision(cfg.dtype)
        self.dynamo_flags_absent = apply_dynamo_config(cfg)
        self.compile_threads = compile_threads()
        from .environment import triton_warning

        triton = triton_warning(self.device.type, list(cfg.variants))
        if triton is not None:  # said before anything compiles
            self.sink.event(protocol.WarningEvent(message=triton))
        try:
            self._prepare_inputs()
        except BaseException as exc:  # noqa: BLE001 - reported; nothing was measured yet
            if isinstance(exc, KeyboardInterrupt):
                raise
            self.send_error(None, exc, "preparing the input and the fp64 reference")
            return protocol.RunStatus.FAILED
        try:
            if cfg.rounds > 1:
                self._run_rounds()
            else:
                self._run_one_round()
            self._start_timing()  # nothing was timed: the run info is still sent
        except Stopped:
            self.sink.flush()
            return protocol.RunStatus.STOPPED
        except RunFailed:
            self.sink.flush()
            return protocol.RunStatus.FAILED
        finally:
            self.skip_log.close()
            self.why.close()
        self.sink.flush()
        return protocol.RunStatus.COMPLETE

    def _run_one_round(self) -> None:
        """Each variant in turn: first call, warm-up, timed window, checks."""
        cfg = self.config
        last_compiled = max((i for i, n in enumerate(cfg.variants) if not is_eager(n)), default=-1)
        for i, name in enumerate(cfg.variants):
            if not is_eager(name):
                self.pin.unpin()  # what this compile starts gets every core
            v = prepare_variant(self, name)
            if i >= last_compiled:
                self._no_more_compiles()
            if v is None:
                continue
            self._start_timing(later_compiles=i < last_compiled)
            if not self._warm_up_one(v):
                continue
            self.timer.recalibrate()  # the clocks are warm now
            try:
                self._measure(v, cfg.iterations)
            finally:
                self.turns.end(v.name)
            finish_variant(self, v)
            del v
            if self.is_cuda:
                torch.cuda.empty_cache()

    def _start_timing(self, later_compiles: bool = False) -> None:
        """Before a timed call (warm-up included): the timing thread pinned, the run info sent once.

        ``later_compiles``: more variants compile after this one (the thread is unpinned for them).
        """
        self.pin.pin(later_compiles)
        if self._info_sent:
            return
        self._info_sent = True
        try:
            self._report_run_info()
        except BaseException as exc:  # noqa: BLE001 - reported; nothing is timed without it
            if isinstance(exc, KeyboardInterrupt):
                raise
            self.send_error(None, exc, "measuring the harness floor")
            raise RunFailed from exc

    # -- steps -------------------------------------------------------------
    def _prepare_inputs(self) -> None:
        """The input batch, and the fp64 reference every variant is checked against.

        No step here changes the model that the reference is computed from: FLOPs
        are counted, and randomness looked for, on copies.
        """
        cfg = self.config
        workload = build_workload(cfg)
        self._read_dtypes(workload)
        # FLOPs do not depend on the dtype: a model converted to one is counted in fp32
        self.flops_per_call = count_flops(
            workload, self.training, None if self.dtype is None else torch.float32
        )
        self.x = move_inputs(workload.inputs, self.device, self.dtype)
        self.random_kind = detect_randomness(self, workload)
        if self.random_kind is not None and any(not is_eager(n) for n in cfg.variants):
            use_eager_random_numbers()
            if hasattr(self.isolated_compile, "fallback_random"):
                # the compiles timed in fresh processes compile as this run does
                setattr(self.isolated_compile, "fallback_random", True)  # noqa: B010
        # converts the model in place: one copy of the weights at a time
        reseed = self.reseed if self.random_kind else None
        try:
            self.reference, self.reference_grads = reference_output(workload, self.training, reseed)
        except Exception as exc:  # noqa: BLE001 - the model cannot run in fp64: eager is the reference
            del workload
            self._fall_back_reference(exc, reseed)
        else:
            del workload
        if cfg.cold_l2:
            self.flush = CacheFlush.for_device(self.device)
            # the device-timed call after the wall-timed one finds the cache cold too
            self.timer.between_calls = self.flush.evict
        self.timer.sync()

    def _fall_back_reference(self, exc: Exception, reseed: Callable[[], None] | None) -> None:
        """The fp64 reference failed: eager in the run's dtype, on the run's device, is the reference.

        Its outputs are judged by the dtype's bounds without the rule against eager's own
        error (eager is the reference); the run says which reference it used and why.
        """
        workload = build_workload(self.config)
        self.reference, self.reference_grads = reference_output(
            workload, self.training, reseed, self.device, self.dtype
        )
        del workload
        ran = self.model_dtype or (dtype_name(self.dtype) if self.dtype is not None else "its own dtype")
        self.reference_kind = f"eager {ran}"
        reason = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
        self.reference_note = (
            f"the model cannot run in fp64 ({reason}): outputs are checked against eager in {ran} "
            f"on {self.device.type}, by the {self.check_dtype} bounds without the rule against "
            "eager's own error"
        )

    def _read_dtypes(self, workload: Workload) -> None:
        """The dtypes the model runs in, the tolerances that judge it, and every conversion."""
        cfg = self.config
        given = model_dtype(workload.model)
        floating_inputs = {
            x.dtype
            for _, x in named_inputs(workload.inputs)
            if isinstance(x, torch.Tensor) and x.is_floating_point()
        }
        ran = given if self.dtype is None or given is None else self.dtype
        self.model_dtype = dtype_name(ran) if ran is not None else None
        if self.dtype is None:
            self.check_dtype = checks.tolerance_key(ran or lowest_precision(floating_inputs))
            odd = sorted(dtype_name(d) for d in floating_inputs if d != given)
            if given is not None and odd:
                self.given_mismatch = (
                    f"the factory's model is {dtype_name(given)} and its inputs "
                    f"{' and '.join(odd)}: they run as given, unconverted"
                )
        if cfg.model == "custom":
            self.conversions = conversions(workload, self.dtype, cfg.dtype)

    def _report_run_info(self) -> None:
        floor_host, floor_device = self.timer.floor()
        self.sink.event(
            protocol.RunInfoEvent(
                harness_floor_ms=floor_host,
                harness_floor_device_ms=floor_device,
                timer="cuda_events" if self.timer.use_events else "host",
                memory_kind=self.memory.kind,
                clock_source=self.clock.source,
                torch_threads=torch.get_num_threads(),
                cache_flush_bytes=self.flush.nbytes if self.flush else None,
                correctness_rule=checks.rule_text(self.check_dtype, self.reference_kind),
                reference=self.reference_kind,
                reference_note=self.reference_note,
                gpu_uuid=self.gpu_uuid,
                flops_per_call=self.flops_per_call,
                cpu_pinning=self.pin.text,
                compile_threads=self.compile_threads,
                inputs=describe_inputs(self.x),
                batch_size=batch_of(self.x),
                model_dtype=self.model_dtype,
                conversions=list(self.conversions),
                randomness=RANDOMNESS_TEXT.get(self.random_kind or ""),
            )
        )
        if self.random_kind is not None:
            self.sink.event(protocol.WarningEvent(message=RANDOMNESS_TEXT[self.random_kind]))
        if self.given_mismatch is not None:
            self.sink.event(protocol.WarningEvent(message=self.given_mismatch))
        if self.reference_note is not None:
            self.sink.event(protocol.WarningEvent(message=self.reference_note))
        for flag in self.dynamo_flags_absent:
            self.sink.event(protocol.WarningEvent(
                message=f"torch._dynamo.config has no {flag} in torch {torch.__version__}: not set"
            ))

    def _warm_up_one(self, v: Variant) -> bool:
        """One variant's warm-up, right before its timed window; False if it failed."""
        try:
            self._warm_up(v)
        except Stopped:
            raise
        except BaseException as exc:  # noqa: BLE001
            self.send_error(v.name, exc, "warming up")
            return False
        return True

    def _warm_up(self, v: Variant) -> None:
        """``warmup`` calls, then more until ``warmup_min_ms`` has passed (clocks ramp up)."""
        cfg = self.config
        if cfg.warmup <= 0 and cfg.warmup_min_ms <= 0:
            return
        self.send_phase(v.name, protocol.Phase.WARMUP, cfg.warmup)
        deadline = time.monotonic() + cfg.warmup_min_ms / 1000.0
        self._calls(v, protocol.Phase.WARMUP, cfg.warmup)
        while time.monotonic() < deadline:
            self._calls(v, protocol.Phase.WARMUP, max(1, cfg.warmup // 4 or 1))

    def _calls(
        self,
        v: Variant,
        phase: protocol.Phase,
        count: int,
        measure: bool = False,
        round_index: int | None = None,
    ) -> None:
        """``count`` timed calls of one variant; recompiles they caused are its own.

        Variants never run concurrently, so the change of Dynamo's global frame
        counter around a group of one variant's calls belongs to that variant
        (also in rounds, where another variant may compile in between).
        """
        before = dynamo_counts()["frames"]
        step, x, sink, time_call = v.step, self.x, self.sink, self.timer.time
        flush = self.flush
        name = v.name
        turns = self.turns
        clock_ns = time.monotonic_ns

        def call() -> Any:
            return step(x)

        if measure:
            start = self.clock.read()
            skips_before = self.skip_log.count()
            self.memory.start()
        try:
            with self.no_grad(), no_gc():
                if measure:
                    # a block starts after a pause, or where another variant's calls were timed last
                    if turns.enter(name) or self.last_timed != name:
                        self._untimed(call)
                    self.last_timed = name
                    if self.timer.host_only:
                        self._host_timed_calls(v, count, round_index, call)
                        return
                for _ in range(count):
                    if self.stop.is_set():
                        raise Stopped
                    if flush is not None:
                        flush.evict()
                        self.timer.sync()
                    t0 = clock_ns() if measure else None  # a timed call's start stamp
                    wall, device_ms = time_call(call)
                    sink.sample(name, phase, v.iteration, wall, device_ms, round_index, t0)
                    v.iteration += 1
                    if measure and turns.due():
                        turns.pause(name)
                        self._untimed(call)
        finally:
            new = dynamo_counts()["frames"] - before
            v.recompiles += new
            if new:
                self.why.recompiled(name, measure)
            if measure:
                v.recompiles_in_window += new
                self.memory.stop(name)
                # a CUDA graph skipped (or re-recorded) after its first call
                v.cudagraph_skips.extend(self.skip_log.in_window(skips_before))
                end = self.clock.read()
                if v.clock_start is None:
                    v.clock_start = start.to_dict()
                v.clock_end = end.to_dict()
                change = clock_change(start, end)
                if change is not None and (
                    v.clock_max_change is None or abs(change) > abs(v.clock_max_change)
                ):
                    v.clock_max_change = change

    def _host_timed_calls(
        self, v: Variant, count: int, round_index: int | None, call: Callable[[], Any]
    ) -> None:
        """``count`` timed calls of ``v`` on the host clock (the CPU), as lean as a timeit loop.

        Between two timed calls the loop only keeps the call's clock readings in two lists and
        compares the end with the block's: the samples reach the sink after the block (they
        would wait for its end anyway, :mod:`.turns`), so no sink code runs between calls, and
        the clock is read around ``step(x)`` itself, with no wrapper call inside the timed
        span. With cold L2 the cache is evicted before each call, outside its span, as on the
        other path. A call's start on the monotonic clock (for the window's repaints) is its
        ``perf_counter`` reading plus the two clocks' offset, read once per block. Samples
        already timed are kept when a call raises or the run stops.
        """
        step, x, name = v.step, self.x, v.name
        stop, turns, sink, flush = self.stop, self.turns, self.sink, self.flush
        counter_ns = time.perf_counter_ns
        walls: list[int] = []
        starts: list[int] = []
        offset = 0

        def block_end() -> int:
            """The block's end on the perf_counter clock (and the offset to the monotonic)."""
            nonlocal offset
            offset = time.monotonic_ns() - counter_ns()
            left = turns.remaining_s()
            return counter_ns() + int(left * 1e9) if left is not None else 1 << 62

        def hand_over() -> None:
            if walls:
                sink.samples(name, protocol.Phase.MEASURE, v.iteration, walls, round_index,
                             [s + offset for s in starts])
                v.iteration += len(walls)
                walls.clear()
                starts.clear()

        end = block_end()
        try:
            for _ in range(count):
                if stop.is_set():
                    raise Stopped
                if flush is not None:
                    flush.evict()
                a = counter_ns()
                step(x)
                b = counter_ns()
                walls.append(b - a)
                starts.append(a)
                if b >= end:
                    hand_over()
                    turns.pause(name)
                    self._untimed(call)
                    end = block_end()
        finally:
            hand_over()

    def _measure(self, v: Variant, count: int, round_index: int | None = None) -> None:
        """``count`` timed calls of the window; the device samples they took are ``v``'s."""
        samples, uncovered = self.timer.counts()
        try:
            self._calls(v, protocol.Phase.MEASURE, count, measure=True, round_index=round_index)
        finally:
            now = self.timer.counts()
            v.device_samples += now[0] - samples
            v.uncovered += now[1] - uncovered

    def _untimed(self, call: Callable[[], Any]) -> None:
        """The calls that start a block after a pause, untimed: one, and more until
        :data:`.turns.SETTLE_S` has passed (see :mod:`.turns`)."""
        settle(call, self.timer.sync)

    def _warm_up_together(self, live: list[Variant]) -> list[Variant]:
        """All variants warmed up alternating (A B A B …), right before round 1; those left.

        Blocks of ``max(1, warmup // 4)`` calls in turn until each variant has had
        ``warmup`` calls and ``warmup_min_ms`` has passed since the first.
        """
        cfg = self.config
        live = list(live)
        if not live or (cfg.warmup <= 0 and cfg.warmup_min_ms <= 0):
            return live
        for v in live:
            self.send_phase(v.name, protocol.Phase.WARMUP, cfg.warmup)
        block = max(1, cfg.warmup // 4)
        done = {v.name: 0 for v in live}
        deadline = time.monotonic() + cfg.warmup_min_ms / 1000.0
        while live:
            for v in list(live):
                short = cfg.warmup - done[v.name]
                if short <= 0 and time.monotonic() >= deadline:
                    continue
                count = min(block, short) if short > 0 else block
                try:
                    self._calls(v, protocol.Phase.WARMUP, count)
                except Stopped:
                    raise
                except BaseException as exc:  # noqa: BLE001
                    self.send_error(v.name, exc, "warming up")
                    live.remove(v)
                    continue
                done[v.name] += count
            if time.monotonic() >= deadline and all(done[v.name] >= cfg.warmup for v in live):
                break
        return live

    def _run_rounds(self) -> None:
        cfg = self.config
        live = [v for v in (prepare_variant(self, n) for n in cfg.variants) if v is not None]
        self._no_more_compiles()
        if not live:
            return
        self._start_timing()
        blocks = round_blocks(cfg.iterations, cfg.rounds)
        gc.collect()
        live = self._warm_up_together(live)
        self.timer.recalibrate()  # the clocks are warm now
        for v in live:
            self.send_phase(v.name, protocol.Phase.MEASURE, cfg.iterations)
        try:
            for r, block in enumerate(blocks):
                for v in list(live):
                    try:
                        self._measure(v, block, r)
                    except Stopped:
                        raise
                    except BaseException as exc:  # noqa: BLE001
                        self.send_error(v.name, exc, "measuring")
                        live.remove(v)
        finally:
            self.turns.end()
        time_unpinned(self, live)
        eager = next((v for v in live if v.name == "eager"), None)
        if eager is not None and self.training:
            # eager's check steps first: the others are compared with them
            try:
                drift_steps(self, eager)
            except Stopped:
                raise
            except BaseException as exc:  # noqa: BLE001
                self.send_error(eager.name, exc, "running the training check's steps")
                live.remove(eager)
        for v in live:
            finish_variant(self, v)

    def _no_more_compiles(self) -> None:
        """Every variant is compiled: whatever timed the compiles stops before the timed calls."""
        close = getattr(self.isolated_compile, "close", None)
        if callable(close):
            close()
