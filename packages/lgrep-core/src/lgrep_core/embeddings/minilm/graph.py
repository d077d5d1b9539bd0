"""The BERT encoder of all-MiniLM-L6-v2 written as an ONNX graph with the onnx helper API (no ONNX
export of the weights can be downloaded here), optionally prepared for quantization: SmoothQuant
scales folded in and padding rows zeroed before each weight MatMul (quantize.py says why)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    import onnx

__all__ = ["HIDDEN", "LAYERS", "StoreData", "build_graph", "matmul_node"]

_OPSET: Final = 17  # the first opset with LayerNormalization
_IR_VERSION: Final = 8  # opset 17 needs IR 8; older readers (onnxruntime >= 1.13) accept it

HIDDEN: Final = 384
_HEADS: Final = 12
_HEAD_DIM: Final = HIDDEN // _HEADS
LAYERS: Final = 6
_LN_EPS: Final = 1e-12


def matmul_node(name: str) -> str:
    return f"{name}.matmul"


# Given the tensor (name, shape, type) and its values, either stores the values elsewhere and points
# the tensor at them (True) or leaves them to be written in the graph (False).
StoreData = Callable[["onnx.TensorProto", npt.NDArray[Any]], bool]


class _GraphWriter:
    """Collects nodes and initializers with readable, unique names.

    Each initializer is written in place in the model's graph, the tensor onnx.numpy_helper.from_array
    makes (or one that points where `store_data` put its values): built apart, collected in a list and
    handed to onnx.helper's make_graph and make_model, the ~90 MB of weights were held three times at
    once (the list, the graph's copy, the model's).
    """

    def __init__(self, model: onnx.ModelProto, store_data: StoreData | None) -> None:
        from onnx import helper

        self._helper = helper
        self.nodes: list[onnx.NodeProto] = []
        self._initializers = model.graph.initializer
        self._store_data = store_data
        self._count = 0

    def const(self, name: str, value: npt.ArrayLike, dtype: npt.DTypeLike = np.float32) -> str:
        # At least one dimension (a scalar is stored as shape [1]); ONNX raw data is little-endian.
        array = np.ascontiguousarray(np.asarray(value, dtype=np.dtype(dtype).newbyteorder("<")))
        tensor = self._initializers.add(
            name=name, dims=array.shape, data_type=self._helper.np_dtype_to_tensor_dtype(array.dtype)
        )
        if self._store_data is None or not self._store_data(tensor, array):
            tensor.raw_data = array.tobytes()
        return name

    def op(self, op_type: str, inputs: Sequence[str], *, name: str | None = None, **attrs: Any) -> str:
        self._count += 1
        node_name = name or f"{op_type.lower()}_{self._count}"
        output = f"{node_name}:out"
        self.nodes.append(self._helper.make_node(op_type, list(inputs), [output], name=node_name, **attrs))
        return output


def build_graph(
    weights: Mapping[str, npt.NDArray[Any]],
    *,
    smoothing: Mapping[str, npt.NDArray[np.float32]] | None,
    store_data: StoreData | None = None,
) -> tuple[onnx.ModelProto, dict[str, str]]:
    """The BertModel encoder of all-MiniLM-L6-v2, output last_hidden_state.

    With `smoothing` (one scale vector per weight MatMul), builds the graph that gets quantized: the
    same function, with each MatMul input divided by its scales, the weight rows multiplied by them,
    and padding rows zeroed. Returns the model and, per weight MatMul, the name of its input tensor.
    `store_data` may keep initializers' values out of the model (in a data file beside it).
    """
    from onnx import ModelProto, TensorProto, helper

    model = ModelProto()
    g = _GraphWriter(model, store_data)
    matmul_inputs: dict[str, str] = {}

    def w(name: str) -> npt.NDArray[np.float32]:
        return np.asarray(weights[name], dtype=np.float32)

    def linear(name: str, x: str, weight: npt.NDArray[np.float32], bias: npt.NDArray[np.float32]) -> str:
        # torch Linear stores (out, in); MatMul wants (in, out).
        kernel = weight.T
        matmul_inputs[name] = x
        if smoothing is not None:
            x = g.op("Mul", [x, pad_mask], name=f"{name}.zero_padding")
            if name in smoothing:
                scales = smoothing[name]
                kernel = kernel * scales[:, None]
                x = g.op("Mul", [x, g.const(f"{name}.smooth_inv", 1.0 / scales)], name=f"{name}.smooth")
        y = g.op("MatMul", [x, g.const(f"{name}.weight", kernel)], name=matmul_node(name))
        return g.op("Add", [y, g.const(f"{name}.bias", bias)], name=f"{name}.add_bias")

    def layer_norm(name: str, x: str, prefix: str) -> str:
        return g.op(
            "LayerNormalization",
            [
                x,
                g.const(f"{name}.gamma", w(f"{prefix}.weight")),
                g.const(f"{name}.beta", w(f"{prefix}.bias")),
            ],
            name=name,
            axis=-1,
            epsilon=_LN_EPS,
        )

    # Embeddings. Every input is one segment (token type 0), so that row folds into the position table.
    positions = w("embeddings.position_embeddings.weight") + w("embeddings.token_type_embeddings.weight")[0]
    seq_len = g.op(
        "Slice",
        [
            g.op("Shape", ["input_ids"], name="ids_shape"),
            g.const("one", [1], np.int64),
            g.const("two", [2], np.int64),
        ],
        name="seq_len",
    )
    zero = g.const("zero", [0], np.int64)
    position_rows = g.op("Slice", [g.const("position_table", positions), zero, seq_len, zero], name="positions")
    tokens = g.op(
        "Gather",
        [g.const("word_table", w("embeddings.word_embeddings.weight")), "input_ids"],
        name="words",
        axis=0,
    )
    x = layer_norm(
        "embeddings.norm", g.op("Add", [tokens, position_rows], name="embeddings.sum"), "embeddings.LayerNorm"
    )

    mask_f = g.op("Cast", ["attention_mask"], name="mask_float", to=TensorProto.FLOAT)
    # Additive attention bias (batch, 1, 1, seq): 0 for tokens, float32 min for padding, as transformers does.
    masked = g.op("Sub", [g.const("one_f", 1.0), mask_f], name="mask_inverted")
    bias = g.op("Mul", [masked, g.const("mask_fill", np.finfo(np.float32).min)], name="mask_fill")
    attention_bias = g.op("Unsqueeze", [bias, g.const("axes_1_2", [1, 2], np.int64)], name="attention_bias")
    pad_mask = ""
    if smoothing is not None:
        pad_mask = g.op("Unsqueeze", [mask_f, g.const("axes_2", [2], np.int64)], name="pad_mask")

    to_heads = g.const("shape_heads", [0, 0, _HEADS, _HEAD_DIM], np.int64)
    to_hidden = g.const("shape_hidden", [0, 0, HIDDEN], np.int64)
    q_scale = 1.0 / math.sqrt(_HEAD_DIM)  # folded into the query projection
    sqrt2 = g.const("sqrt2", math.sqrt(2.0))
    half = g.const("half", 0.5)

    def heads(t: str, perm: list[int]) -> str:
        return g.op("Transpose", [g.op("Reshape", [t, to_heads])], name=f"{t}.heads", perm=perm)

    for i in range(LAYERS):
        p = f"encoder.layer.{i}"
        n = f"l{i}"
        qkv_w = np.concatenate(
            [
                w(f"{p}.attention.self.query.weight") * q_scale,
                w(f"{p}.attention.self.key.weight"),
                w(f"{p}.attention.self.value.weight"),
            ]
        )
        qkv_b = np.concatenate(
            [
                w(f"{p}.attention.self.query.bias") * q_scale,
                w(f"{p}.attention.self.key.bias"),
                w(f"{p}.attention.self.value.bias"),
            ]
        )
        qkv = linear(f"{n}.qkv", x, qkv_w, qkv_b)
        split = g.const(f"{n}.qkv_sizes", [HIDDEN] * 3, np.int64)
        q, k, v = (f"{n}.{part}" for part in "qkv")
        g.nodes.append(helper.make_node("Split", [qkv, split], [q, k, v], name=f"{n}.split", axis=2))

        scores = g.op("MatMul", [heads(q, [0, 2, 1, 3]), heads(k, [0, 2, 3, 1])], name=f"{n}.scores")
        probs = g.op("Softmax", [g.op("Add", [scores, attention_bias], name=f"{n}.masked_scores")], axis=-1)
        context = g.op("MatMul", [probs, heads(v, [0, 2, 1, 3])], name=f"{n}.context")
        context = g.op("Reshape", [g.op("Transpose", [context], perm=[0, 2, 1, 3]), to_hidden], name=f"{n}.merge")
        attn = linear(
            f"{n}.attn_out",
            context,
            w(f"{p}.attention.output.dense.weight"),
            w(f"{p}.attention.output.dense.bias"),
        )
        x = layer_norm(
            f"{n}.attn_norm",
            g.op("Add", [attn, x], name=f"{n}.attn_residual"),
            f"{p}.attention.output.LayerNorm",
        )

        h = linear(f"{n}.ffn_in", x, w(f"{p}.intermediate.dense.weight"), w(f"{p}.intermediate.dense.bias"))
        # Exact (erf) GELU, spelled the way onnxruntime's GeluFusion recognises.
        erf = g.op("Erf", [g.op("Div", [h, sqrt2])])
        h = g.op("Mul", [g.op("Mul", [h, g.op("Add", [erf, "one_f"])]), half], name=f"{n}.gelu")
        out = linear(f"{n}.ffn_out", h, w(f"{p}.output.dense.weight"), w(f"{p}.output.dense.bias"))
        x = layer_norm(f"{n}.ffn_norm", g.op("Add", [out, x], name=f"{n}.ffn_residual"), f"{p}.output.LayerNorm")

    g.nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"], name="last_hidden_state"))
    # What helper.make_graph and make_model would write, into the model that holds the initializers.
    graph = model.graph
    graph.node.extend(g.nodes)
    graph.name = "all-MiniLM-L6-v2"
    graph.input.extend(
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "sequence"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "sequence"]),
        ]
    )
    graph.output.append(
        helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "sequence", HIDDEN])
    )
    model.opset_import.append(helper.make_opsetid("", _OPSET))
    model.producer_name = "lgrep"
    model.ir_version = _IR_VERSION
    return model, matmul_inputs
