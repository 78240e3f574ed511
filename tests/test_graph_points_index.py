"""GraphIndex walks, graph loading errors and the speed targets.

The index is what the runtime uses to keep probes on the path of the fetched
train op, so its walks are checked against a naive reference on random graphs
with cycles (hypothesis), and on a real tf.while_loop graph.
"""
from __future__ import annotations

import random
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tensorflow.core.framework import graph_pb2

from npu_tf_profiling.graph_points import (
    GraphIndex,
    GraphLoadError,
    find_trace_points,
    load_graph,
)
from npu_tf_profiling.graph_points.errors import closest_names
from npu_tf_profiling.testing.graph_synthetic import synthetic_training_graph_def
from tests.helpers import graphs_for_tests as graphs

pytestmark = pytest.mark.filterwarnings("ignore:.*is deprecated:UserWarning")


# ------------------------------------------------------------------ walks
def test_ancestors_follow_data_and_control_edges() -> None:
    index = GraphIndex.from_graph(graphs.mlp_graph())
    # GradientDescent (the global-step AssignAdd) reaches the updates only
    # through the control input of its Const: ^GradientDescent/update.
    assert index.control_inputs("GradientDescent/Const") == ["GradientDescent/update"]
    ancestors = index.ancestors(["GradientDescent"])
    assert "GradientDescent/update_hidden/kernel/ResourceApplyGradientDescent" in ancestors
    assert "IteratorGetNext" in ancestors and "GradientDescent" in ancestors
    assert "hidden/kernel/Assign" not in ancestors  # initializers are not run by the step
    assert "GradientDescent" in index.descendants(["hidden/MatMul"])


def test_ancestors_terminate_on_while_loop_cycles() -> None:
    graph = graphs.control_flow_graph(v2=False)
    index = GraphIndex.from_graph(graph)
    next_iteration = [op.name for op in graph.get_operations() if op.type == "NextIteration"]
    assert next_iteration
    merge = index.consumers(next_iteration[0])[0]
    assert index.op_type(merge) == "Merge"
    ancestors = index.ancestors([merge])
    assert next_iteration[0] in ancestors and merge in ancestors  # round the cycle, once
    assert merge in index.descendants([next_iteration[0]])
    # topological order ignores only the back edges
    pos = index.topo_pos
    for i, inputs in enumerate(index.data_in):
        for j in inputs:
            if index.types[j] != "NextIteration":
                assert pos[j] < pos[i]


def test_names_tensor_names_and_unknown_ops() -> None:
    index = GraphIndex.from_graph(graphs.mlp_graph().as_graph_def())
    assert "hidden/MatMul" in index and "hidden/MatMul:0" in index and "^hidden/MatMul" in index
    assert "nope" not in index and 3 not in index
    assert index.op_type("IteratorGetNext:1") == "IteratorGetNext"
    assert index.inputs("hidden/MatMul") == ["IteratorGetNext:0", "hidden/MatMul/ReadVariableOp:0"]
    assert index.ancestors(["hidden/MatMul:0"]) == index.ancestors(["hidden/MatMul"])
    with pytest.raises(KeyError, match="nope"):
        index.ancestors(["nope"])


def test_from_graph_accepts_graph_graph_def_and_meta_graph_def() -> None:
    import tensorflow as tf

    graph = graphs.mlp_graph()
    with graph.as_default():
        meta = tf.compat.v1.train.export_meta_graph(graph=graph)
    sizes = {len(GraphIndex.from_graph(g)) for g in (graph, graph.as_graph_def(), meta)}
    assert sizes == {len(graph.get_operations())}
    with pytest.raises(TypeError):
        GraphIndex.from_graph(42)


def _input_text(src: int, kind: int) -> str:
    """kind: 0 data output 0 ("n3"), 1 control ("^n3"), k >= 2 data output k-1 ("n3:1")."""
    return {0: f"n{src}", 1: f"^n{src}"}.get(kind, f"n{src}:{kind - 1}")


def _graph_def(edges: list[tuple[int, int, int]], back: set[int], count: int) -> graph_pb2.GraphDef:
    graph_def = graph_pb2.GraphDef()
    for i in range(count):
        node = graph_def.node.add()
        node.name = f"n{i}"
        node.op = "NextIteration" if i in back else "Identity"
    for src, dst, kind in edges:
        graph_def.node[dst].input.append(_input_text(src, kind))
    return graph_def


@st.composite
def random_graphs(draw: st.DrawFn) -> tuple[int, list[tuple[int, int, int]], set[int]]:
    count = draw(st.integers(1, 40))
    edges = draw(st.lists(st.tuples(st.integers(0, count - 1), st.integers(0, count - 1), st.integers(0, 3)),
                          max_size=120))
    back = set(draw(st.lists(st.integers(0, count - 1), max_size=5)))
    return count, edges, back


@settings(max_examples=150, deadline=None)
@given(random_graphs(), st.data())
def test_walks_match_a_naive_fixed_point(graph: tuple, data: st.DataObject) -> None:
    count, edges, back = graph
    index = GraphIndex(_graph_def(edges, back, count))
    start = data.draw(st.lists(st.integers(0, count - 1), min_size=1, max_size=3))
    expected_up = set(start)
    expected_down = set(start)
    changed = True
    while changed:  # naive closure, cycles included
        changed = False
        for src, dst, _ in edges:
            if dst in expected_up and src not in expected_up:
                expected_up.add(src)
                changed = True
            if src in expected_down and dst not in expected_down:
                expected_down.add(dst)
                changed = True
    names = [f"n{i}" for i in start]
    assert index.ancestors(names) == {f"n{i}" for i in expected_up}
    assert index.descendants(names) == {f"n{i}" for i in expected_down}
    pos = index.topo_pos
    assert sorted(pos) == list(range(count))
    for i in range(count):  # data inputs keep their order and output index; control ones are apart
        texts = [_input_text(src, kind) for src, kind in ((s, k) for s, d, k in edges if d == i)]
        assert index.inputs(f"n{i}") == [t if ":" in t else f"{t}:0" for t in texts if not t.startswith("^")]
        assert index.control_inputs(f"n{i}") == [t[1:] for t in texts if t.startswith("^")]


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 60), st.randoms(use_true_random=False))
def test_topological_order_of_a_shuffled_dag(count: int, rng: random.Random) -> None:
    edges = [(rng.randrange(0, j), j, rng.randint(0, 3)) for j in range(1, count) for _ in range(rng.randint(0, 2))]
    order = list(range(count))
    rng.shuffle(order)  # node k of the GraphDef is original op order[k]
    where = {original: k for k, original in enumerate(order)}
    shuffled = [(where[s], where[d], c) for s, d, c in edges]
    index = GraphIndex(_graph_def(shuffled, set(), count))
    pos = index.topo_pos
    for src, dst, _ in shuffled:
        assert pos[src] < pos[dst]


# ---------------------------------------------------------------- speed
@pytest.mark.timing
def test_index_and_discovery_speed_on_100k_ops() -> None:
    synthetic = synthetic_training_graph_def(100_000)
    assert len(synthetic.graph_def.node) > 90_000
    started = time.perf_counter()
    index = GraphIndex.from_graph(synthetic.graph_def)
    build = time.perf_counter() - started
    started = time.perf_counter()
    on_path = index.ancestors([synthetic.train_op])
    walk = time.perf_counter() - started
    assert synthetic.fp in on_path and "init" not in on_path
    assert walk < 0.5, walk
    assert build < 2.0, build  # ~0.3 s here; generous for slow CI machines
    started = time.perf_counter()
    points = find_trace_points(synthetic.graph_def)
    total = time.perf_counter() - started
    assert (points.fp, points.bp, points.iteration_end) == (synthetic.fp, synthetic.bp, synthetic.train_op)
    assert len(points.bp_inputs) == 2 * synthetic.layers
    assert total < 3.0, total  # target < 1 s, see benchmarks/points_speed.py


# -------------------------------------------------------------- loading
def test_missing_path(tmp_path: Path) -> None:
    missing = tmp_path / "nope.pbtxt"
    with pytest.raises(GraphLoadError, match="nope.pbtxt: no such file or directory .*expected a GraphDef"):
        load_graph(missing)


@pytest.mark.parametrize("name, content", [
    ("corrupt.pb", bytes(range(256)) * 4),
    ("corrupt.pbtxt", b"node { name: 'a' op: \n garbage {{{"),
    ("corrupt.meta", b"\xff\xfe not a meta graph \x00\x01"),
    ("empty.pb", b""),
    ("no_ops.pbtxt", b"versions { producer: 1 }"),
])
def test_corrupt_files_name_the_path_and_what_was_expected(tmp_path: Path, name: str, content: bytes) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(GraphLoadError) as error:
        find_trace_points(path)
    assert str(path) in str(error.value)
    assert "expected a GraphDef (.pb binary or .pbtxt text), a MetaGraphDef (.meta) or a SavedModel" in str(error.value)


def test_truncated_binary_graph_def(tmp_path: Path) -> None:
    data = graphs.mlp_graph().as_graph_def().SerializeToString()
    path = tmp_path / "truncated.pb"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(GraphLoadError, match="truncated.pb"):
        load_graph(path)


def test_directory_without_saved_model(tmp_path: Path) -> None:
    with pytest.raises(GraphLoadError, match="without saved_model.pb"):
        load_graph(tmp_path)


def test_files_and_saved_model_load_with_their_collections(tmp_path: Path) -> None:
    graph = graphs.mlp_graph("momentum")
    files = graphs.write_graph_files(graph, tmp_path / "files")
    meta = load_graph(files["meta"])
    assert meta.train_ops == ("Momentum",) and meta.global_steps == ("global_step",)
    assert load_graph(files["pb"]).train_ops == ()  # a bare GraphDef has no collections
    assert len(load_graph(files["pbtxt"]).graph_def.node) == len(graph.get_operations())
    saved = load_graph(graphs.write_saved_model(graph, tmp_path / "saved"))
    assert "tags: train" in saved.origin
    assert saved.train_ops == ("Momentum",)
    for source in (files["pb"], files["pbtxt"], files["meta"], tmp_path / "saved", str(files["pb"])):
        points = find_trace_points(source)
        assert (points.fp, points.bp, points.iteration_end) == (
            "hidden/MatMul", "gradients/hidden/MatMul_grad/MatMul_1", "Momentum")


def test_closest_names_on_a_big_graph() -> None:
    names = [f"layer_{k}/MatMul" for k in range(5000)] + ["gradients/layer_7/MatMul_grad/MatMul_1"]
    found = closest_names("gradient/layer_7/MatMul_grad/MatMul_1", names)
    assert len(found) == 5 and found[0] == "gradients/layer_7/MatMul_grad/MatMul_1"


def test_updating_functions_are_found_through_nested_calls() -> None:
    from tensorflow.core.framework import function_pb2

    from npu_tf_profiling.graph_points.functions import APPLY, ASSIGN, updating_functions

    library = function_pb2.FunctionDefLibrary()

    def function(name: str, *ops: tuple[str, str]) -> None:
        f = library.function.add()
        f.signature.name = name
        for op, callee in ops:
            node = f.node_def.add()
            node.name, node.op = f"n_{op}", op
            if callee:
                node.attr["f"].func.name = callee

    function("inner_apply", ("ResourceApplyAdam", ""))
    function("outer", ("StatefulPartitionedCall", "inner_apply"), ("Mul", ""))
    function("direct_caller", ("outer", ""))  # a node whose op is the function itself
    function("assigner", ("AssignVariableOp", ""))
    function("pure", ("MatMul", ""), ("StatefulPartitionedCall", "pure_leaf"))
    function("pure_leaf", ("Relu", ""))
    found = updating_functions(library)
    assert found == {"inner_apply": APPLY, "outer": APPLY, "direct_caller": APPLY, "assigner": ASSIGN}
