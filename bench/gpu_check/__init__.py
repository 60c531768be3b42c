"""Self-checking proof of Compile Studio's figures on a CUDA GPU (H100/H200), or on the CPU.

Runs from a checkout with ``PYTHONPATH=app``; needs torch (and on a GPU
machine Triton), nothing else: numpy, nvidia-ml-py, PySide6, platformdirs
and psutil may all be missing. Stages run in order, print as they go
(unbuffered) and save their figures after every step. An internal deadline
(``--deadline``, 230 s by default) ends the check with what it has. At most
three files land in ``--out``:

* ``gpu_check.json`` — every figure and every check (PASS / FAIL / SKIP);
* ``gpu_check.log``  — everything printed, plus the workers' stderr;
* ``runs.tar.gz``    — the run folders the app wrote.

Stages, one module each (each can be read, run and tested alone):

1. ``environment`` — versions, Inductor's ``compile_threads`` and this process's
   CPU affinity; the NVML UUID of the device used against torch's
   ``props.uuid`` (NVML through nvidia-ml-py, or ``libnvidia-ml.so.1`` through
   ctypes); L2 size and the cold-L2 flush buffer; SM clock and throttle reasons.
2. ``gemm`` — a 4096×4096 bf16 Linear at batch 8192, timed by the app's loop,
   against the device's dense bf16 peak.
3. ``same_process`` — eager, default, reduce-overhead on the same weights, input
   and flags: the app's loop (warm and cold L2), ``Timer.blocked_autorange``,
   ``triton.testing.do_bench``, ``do_bench_cudagraph`` (never around a variant
   that is a CUDA graph itself), a pipelined loop and the harness floor, in
   rounds ×3; then a profiler trace, Inductor's CUDA-graph skip counter,
   replay identity and an L2-resident probe.
4. ``launch_bound`` — the app-run model and the seed MLP, eager / default /
   reduce-overhead: the app's device median against the profiler's kernel
   time per call, ``do_bench`` and a busy-stream event pair of the stage's own.
5. ``cudagraph_skip`` — an in-place input mutation under reduce-overhead: the
   app's skip log records the skip and its reason.
6. ``app_rounds`` — bf16 inference, eager / default / reduce-overhead /
   max-autotune, through a real worker in rounds (A B A B …), with a warm
   Inductor cache shared with the stages before and after it; memory of the
   CUDA-graph variants, SM clock at the start of round 1 and in every window.
7. ``app_sequential`` — the same run, one variant after another.
8. ``app_training`` — an fp32 training step, eager and default, compile timed
   in a fresh process, cold cache; parameter drift against eager.
9. ``imports`` — no desktop-only module loaded.
10. ``tf32_probe`` — eager against max-autotune in tf32 (left out, as a SKIP,
    when the deadline is near).

The app-run stages need numpy (the results layer): without it they are
skipped, saying so, and the others run. ``--device cpu`` runs the same
stages in fp32 with eager, default and aot_eager (``--tiny``: eager and
aot_eager on a 32,32,8 MLP, for the test); every CUDA-only check is skipped
with the reason, and timing comparisons are reported, not asserted.

Exit status: 0 every check passed or was skipped, 1 a check failed, 2 the
deadline hit (or a stage had to be left out for lack of time).

    PYTHONPATH=app python3 -u bench/gpu_check --out "$OUT" --deadline 230
    PYTHONPATH=app python3 -u -m bench.gpu_check --device cpu --tiny --out /tmp/gpu-check
"""
