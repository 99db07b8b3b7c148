#!/usr/bin/python3
"""Writes ONNX backend node tests for the Attention operator, in ONNX's own layout
(NAME/model.onnx, NAME/test_data_set_0/input_N.pb, output_N.pb), for tests/js/package/onnx_node.test.mjs.

    /usr/bin/python3 scripts/onnx_attention_fixtures.py ONNX_SOURCE OUT_DIR [NAME ...]

ONNX_SOURCE: a checkout of github.com/onnx/onnx (Apache-2.0). Its case definitions
(onnx/backend/test/case/node/attention.py) and reference implementation
(onnx/reference/ops/op_attention.py) are run as they are, so the inputs and the expected
outputs are ONNX's; this script only stands in for the parts of the onnx package they import
that the installed one (Debian's python3-onnx, which predates Attention) lacks, and serializes
the cases with that package's helpers. Each case is seeded (numpy seed 0 before it runs; the
cases that seed themselves do so again), so a rerun writes the same files.
NAME: only the cases named (all when none is given).
"""
import importlib.util
import os
import sys
import types

import numpy as np
import onnx
from onnx import helper, numpy_helper

source, out_dir, wanted = sys.argv[1], sys.argv[2], set(sys.argv[3:])


def stub(name, **attrs):
    module = types.ModuleType(name)
    module.__path__ = []  # a package, so that submodules can be imported from it
    module.__dict__.update(attrs)
    sys.modules[name] = module
    return module


def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def expect(node, inputs, outputs, name, opset_imports, **_):
    """ONNX's expect(): a one-node model over the present inputs and outputs, and its data."""
    if wanted and name not in wanted:
        return
    present_in = [n for n in node.input if n]
    present_out = [n for n in node.output if n]
    value_info = lambda array, n: helper.make_tensor_value_info(
        n, onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[array.dtype], array.shape
    )
    graph = helper.make_graph(
        [node],
        name,
        [value_info(a, n) for a, n in zip(inputs, present_in)],
        [value_info(a, n) for a, n in zip(outputs, present_out)],
    )
    model = helper.make_model(graph, producer_name="backend-test", opset_imports=opset_imports)
    model.ir_version = 10
    data = os.path.join(out_dir, name, "test_data_set_0")
    os.makedirs(data, exist_ok=True)
    with open(os.path.join(out_dir, name, "model.onnx"), "wb") as f:
        f.write(model.SerializeToString())
    for kind, arrays, names in (("input", inputs, present_in), ("output", outputs, present_out)):
        for i, (array, n) in enumerate(zip(arrays, names)):
            with open(os.path.join(data, f"{kind}_{i}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(np.asarray(array), n).SerializeToString())
    print(name)


class OpRun:
    """Stands in for onnx.reference.op_run.OpRun, which the reference's operator classes extend."""


class Base:
    """Stands in for onnx.backend.test.case.base.Base."""


# helpers newer than the installed package, from its own type tables
if not hasattr(helper, "tensor_dtype_to_np_dtype"):
    helper.tensor_dtype_to_np_dtype = lambda t: onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[t]
stub("onnx.reference")
stub("onnx.reference.op_run", OpRun=OpRun)
stub("onnx.reference.ops")
stub("onnx.backend")
stub("onnx.backend.test")
stub("onnx.backend.test.case")
stub("onnx.backend.test.case.base", Base=Base)
stub("onnx.backend.test.case.node", expect=expect)
load("onnx.reference.ops.op_attention", os.path.join(source, "onnx/reference/ops/op_attention.py"))
cases = load("onnx_attention_cases", os.path.join(source, "onnx/backend/test/case/node/attention.py"))
for export in sorted(n for n in vars(cases.Attention) if n.startswith("export")):
    np.random.seed(0)
    getattr(cases.Attention, export)()
