#!/usr/bin/env python3
"""Writes the ONNX backend node test cases of the pinned onnx package to a folder.

    python3 scripts/conformance/generate.py OUT_DIR

For each case of onnx.backend.test.case.node.collect_testcases(None): OUT_DIR/cases/<name>/
holds model.onnx and one raw file per input and expected output (the array's bytes,
little-endian, row-major, no header), and OUT_DIR/index.json lists every case with its
tolerances, opset, operator, and each tensor's name, numpy dtype, shape and file. A value
that is not a plain numeric tensor (a sequence, an optional, strings, a float8e8m0 tensor;
bfloat16 is written, as 16-bit patterns, int4/uint4/int2/uint2 as one int8/uint8 byte per
value, the float8 types and float4 e2m1 as one byte of bits per value) is listed with its
kind or dtype and no file, so the runner can refuse it in one line. The folder is written under a temporary name and renamed when complete.
engine/conformance/cases.ts runs this script and reads what it writes.
"""

import json
import os
import re
import shutil
import sys
import warnings

import numpy as np
import onnx
from onnx import numpy_helper
from onnx.backend.test.case.node import collect_testcases

FORMAT = 1


def describe(value, name, case_dir, stem):
    """The index entry of one input or output value; writes its bytes when it is a numeric tensor."""
    entry = {"name": name}
    if value is None:
        entry["kind"] = "optional"
        return entry
    if isinstance(value, list):
        entry["kind"] = "sequence"
        return entry
    if isinstance(value, onnx.TensorProto):
        try:
            value = numpy_helper.to_array(value)
        except Exception:  # a type numpy_helper cannot convert
            entry.update(kind="tensor", dtype=onnx.TensorProto.DataType.Name(value.data_type).lower(), shape=list(value.dims))
            return entry
    if isinstance(value, np.generic):
        value = np.asarray(value)
    if not isinstance(value, np.ndarray):
        entry["kind"] = type(value).__name__
        return entry
    entry.update(kind="tensor", dtype=value.dtype.name, shape=[int(d) for d in value.shape])
    # Only the numpy types that are plain little-endian numbers get a file, and ml_dtypes'
    # bfloat16, as its 16-bit patterns (the top half of a float32); the other ml_dtypes
    # arrays (float8, int4, ...) keep their onnx names and no data.
    if value.dtype.kind in "biuf" and value.dtype.name in PLAIN:
        entry["file"] = f"{stem}.bin"
        with open(os.path.join(case_dir, entry["file"]), "wb") as f:
            f.write(np.ascontiguousarray(value).astype(value.dtype.newbyteorder("<"), copy=False).tobytes())
    elif value.dtype.name == "bfloat16" and value.dtype.itemsize == 2:
        entry["file"] = f"{stem}.bin"
        with open(os.path.join(case_dir, entry["file"]), "wb") as f:
            f.write(np.ascontiguousarray(value).view(np.uint16).astype("<u2", copy=False).tobytes())
    elif value.dtype.name in SMALL_FLOAT and value.dtype.itemsize == 1:
        # ml_dtypes' 8- and 4-bit floats: each value's bit pattern, one byte (float4's in the low 4 bits).
        entry["file"] = f"{stem}.bin"
        with open(os.path.join(case_dir, entry["file"]), "wb") as f:
            f.write(np.ascontiguousarray(value).view(np.uint8).tobytes())
    elif value.dtype.name in SMALL_INT:
        # ml_dtypes' 4- and 2-bit integers, unpacked: one byte per value, as int8 or uint8.
        entry["file"] = f"{stem}.bin"
        with open(os.path.join(case_dir, entry["file"]), "wb") as f:
            f.write(np.ascontiguousarray(value).astype(SMALL_INT[value.dtype.name]).tobytes())
    return entry


SMALL_FLOAT = {"float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float4_e2m1fn"}
SMALL_INT = {"int4": np.int8, "uint4": np.uint8, "int2": np.int8, "uint2": np.uint8}
PLAIN = {"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16", "float32", "float64"}


def value_type(vi):
    """'tensor', 'sequence', 'optional', 'map' or 'sparse_tensor': the kind a graph input or output declares."""
    which = vi.type.WhichOneof("value")
    return (which or "none").replace("_type", "")


def main(out):
    warnings.simplefilter("ignore")  # the case generators' numpy overflow warnings
    # Most cases draw their inputs from numpy's global generator when collected: seeded, the
    # same inputs and expected outputs come out on every machine and every run.
    np.random.seed(0)
    cases = collect_testcases(None)
    by_name = {c.name: c for c in cases}
    tmp = f"{out}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(os.path.join(tmp, "cases"))
    index = []
    for case in cases:
        model = case.model
        case_dir = os.path.join(tmp, "cases", case.name)
        os.makedirs(case_dir)
        with open(os.path.join(case_dir, "model.onnx"), "wb") as f:
            f.write(model.SerializeToString())
        # The operator a case tests: its nodes' op type; an expanded case (the operator's
        # function body inlined) counts for the operator of its unexpanded twin.
        twin = re.sub(r"_expanded.*$", "", case.name)
        source = by_name.get(twin, case)
        ops = sorted({n.op_type for n in source.model.graph.node})
        domains = sorted({n.domain for n in model.graph.node if n.domain not in ("", "ai.onnx")})
        opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), None)
        inputs_decl = [i for i in model.graph.input if i.name not in {t.name for t in model.graph.initializer}]
        data_sets = []
        for k, (inputs, outputs) in enumerate(case.data_sets):
            data_sets.append({
                "inputs": [describe(v, inputs_decl[i].name if i < len(inputs_decl) else f"input{i}", case_dir, f"{k}-in{i}") for i, v in enumerate(inputs)],
                "outputs": [describe(v, model.graph.output[i].name if i < len(model.graph.output) else f"output{i}", case_dir, f"{k}-out{i}") for i, v in enumerate(outputs)],
            })
        index.append({
            "name": case.name,
            "operator": "+".join(ops) if ops else "(none)",
            "expanded": source is not case,
            "domains": domains,
            "opset": opset,
            "rtol": float(case.rtol),
            "atol": float(case.atol),
            "graph_inputs": [{"name": i.name, "type": value_type(i)} for i in inputs_decl],
            "graph_outputs": [{"name": o.name, "type": value_type(o)} for o in model.graph.output],
            "data_sets": data_sets,
        })
    with open(os.path.join(tmp, "index.json"), "w") as f:
        json.dump({"format": FORMAT, "onnx_version": onnx.__version__, "numpy_version": np.__version__, "cases": index}, f)
    shutil.rmtree(out, ignore_errors=True)
    os.rename(tmp, out)
    print(f"conformance: wrote {len(index)} ONNX {onnx.__version__} node test cases to {out}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: generate.py OUT_DIR")
    main(sys.argv[1])
