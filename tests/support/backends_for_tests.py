"""Dynamo backends with known defects, for tests of the checks (a backend module).

A configuration names this file in ``backend_modules``; the worker imports
it and these backends become variants. Each wraps ``aot_eager`` (the same
ATen kernels as eager) and breaks one thing on purpose:

* ``drop_last_bias``  — the last linear layer loses its bias;
* ``scale_1_05``      — every output is ×1.05;
* ``wrong_after_first`` — right on the first call, ×1.05 afterwards;
* ``grads_1_01``      — the backward pass returns gradients ×1.01;
* ``alloc_64mib``     — allocates and touches 64 MiB on every call (freed after);
* ``run_twice``       — runs the model twice per call (about 2× slower, same output);
* ``correct_copy``    — nothing broken.
"""

from __future__ import annotations

import torch
from torch._dynamo import register_backend
from torch._dynamo.backends.common import aot_autograd
from torch.fx import GraphModule

ALLOC_BYTES = 64 << 20

_linear_ops = {torch._C._nn.linear, torch.nn.functional.linear}


def _aot_eager(gm: GraphModule, example_inputs):
    from torch._dynamo.backends.debugging import aot_eager

    return aot_eager(gm, example_inputs)


def _scaled(fn, factor: float):
    def call(*args):
        out = fn(*args)
        if isinstance(out, (list, tuple)):
            return type(out)(o * factor if isinstance(o, torch.Tensor) else o for o in out)
        return out * factor

    return call


@register_backend
def drop_last_bias(gm: GraphModule, example_inputs):
    linears = [n for n in gm.graph.nodes if n.op == "call_function" and n.target in _linear_ops]
    if not linears:
        raise RuntimeError("drop_last_bias: no linear call in the graph")
    last = linears[-1]
    last.args = tuple(last.args[:2])
    last.kwargs = {k: v for k, v in last.kwargs.items() if k != "bias"}
    gm.graph.lint()
    gm.recompile()
    return _aot_eager(gm, example_inputs)


@register_backend
def scale_1_05(gm: GraphModule, example_inputs):
    return _scaled(_aot_eager(gm, example_inputs), 1.05)


@register_backend
def wrong_after_first(gm: GraphModule, example_inputs):
    inner = _aot_eager(gm, example_inputs)
    scaled = _scaled(inner, 1.05)
    calls = [0]

    def call(*args):
        calls[0] += 1
        return inner(*args) if calls[0] == 1 else scaled(*args)

    return call


def _identity_compiler(gm: GraphModule, example_inputs):
    from functorch.compile import make_boxed_func

    return make_boxed_func(gm.forward)


def _scaled_backward(gm: GraphModule, example_inputs):
    from functorch.compile import make_boxed_func

    def call(*args):
        outs = gm(*args)
        return type(outs)(o * 1.01 if isinstance(o, torch.Tensor) else o for o in outs)

    return make_boxed_func(call)


grads_1_01 = register_backend(
    name="grads_1_01",
    compiler_fn=aot_autograd(fw_compiler=_identity_compiler, bw_compiler=_scaled_backward),
)


@register_backend
def alloc_64mib(gm: GraphModule, example_inputs):
    inner = _aot_eager(gm, example_inputs)

    def call(*args):
        block = torch.ones(ALLOC_BYTES, dtype=torch.int8)
        out = inner(*args)
        del block
        return out

    return call


@register_backend
def run_twice(gm: GraphModule, example_inputs):
    inner = _aot_eager(gm, example_inputs)

    def call(*args):
        inner(*args)
        return inner(*args)

    return call


@register_backend
def correct_copy(gm: GraphModule, example_inputs):
    return _aot_eager(gm, example_inputs)
