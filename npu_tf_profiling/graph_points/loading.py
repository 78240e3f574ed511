"""Turn whatever the user has (a tf.Graph, a GraphDef, a file, a SavedModel)
into one GraphDef plus the few collections that help discovery.

Collections matter because they are the script's own statement of intent:
``train_op`` names the iteration end and ``global_step`` the step counter, so
when a tf.Graph or MetaGraphDef carries them we use them instead of guessing.
A bare GraphDef has no collections; discovery then works from structure.

Whatever the source, the GraphDef discovery sees holds the user's model only:
the ops this package added while profiling are left out (``own_ops``), so a
graph saved after a profiled run gives the same points as before it.

Files are parsed by suffix first, then by the other plausible formats, and
every failure becomes a GraphLoadError naming the path and what was expected.
TensorFlow's protobuf modules are imported lazily (only when parsing).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from npu_tf_profiling.graph_points.errors import GraphLoadError
from npu_tf_profiling.graph_points.index import op_name_of
from npu_tf_profiling.graph_points.own_ops import without_own_ops

TRAIN_OP_COLLECTIONS = ("train_op", "saved_model_train_op")
GLOBAL_STEP_COLLECTION = "global_step"
EXPECTED = "a GraphDef (.pb binary or .pbtxt text), a MetaGraphDef (.meta) or a SavedModel directory"


@dataclass(frozen=True)
class LoadedGraph:
    """A GraphDef and what its container said about it.

    train_ops / global_steps: op names from the ``train_op`` and
    ``global_step`` collections (empty for a bare GraphDef).
    origin: a short human description ("GraphDef file x.pb", "SavedModel
    dir (tags: train)"), used in reasons and CLI output.
    runs: the ops every run of the graph executes, when the graph says so: a
    `tf.function`'s outputs and control outputs (its stateful ops). TensorFlow
    prunes everything else from the function, so an op none of them depends on
    never runs (a GAN's gradients that no update reads). Empty: not known (a
    Session's runs choose their own fetches).
    graph_def never holds this package's own ops (they are removed here, so
    no way of building a LoadedGraph can let them through).
    """

    graph_def: Any
    train_ops: tuple[str, ...] = ()
    global_steps: tuple[str, ...] = ()
    origin: str = "GraphDef"
    runs: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "graph_def", without_own_ops(self.graph_def))


def load_graph(source: Any) -> LoadedGraph:
    """Load a tf.Graph, GraphDef, MetaGraphDef, LoadedGraph or path."""
    if isinstance(source, LoadedGraph):
        return source
    if isinstance(source, (str, os.PathLike)):
        return _load_path(Path(source))
    if hasattr(source, "as_graph_def"):
        return _from_tf_graph(source)
    if hasattr(source, "graph_def") and hasattr(source, "collection_def"):
        return _from_meta_graph(source, "MetaGraphDef")
    if hasattr(source, "node") and hasattr(source, "library"):
        return LoadedGraph(graph_def=source, origin="GraphDef")
    raise TypeError(
        f"expected a tf.Graph, a GraphDef, a MetaGraphDef or a path, got {type(source).__name__}"
    )


# ----------------------------------------------------------------- in memory
def _item_op_name(item: Any) -> str | None:
    """Op name of a collection item: an Operation, a Tensor or a Variable."""
    op = getattr(item, "op", None)
    if op is not None and hasattr(op, "name"):
        return op.name
    name = getattr(item, "name", None)
    return op_name_of(name) if isinstance(name, str) else None


def _from_tf_graph(graph: Any) -> LoadedGraph:
    train_ops: list[str] = []
    for key in TRAIN_OP_COLLECTIONS:
        train_ops.extend(n for n in map(_item_op_name, graph.get_collection(key)) if n)
    global_steps = [n for n in map(_item_op_name, graph.get_collection(GLOBAL_STEP_COLLECTION)) if n]
    # A FuncGraph (a tf.function's, a loop body's) lists what its calls run; a plain tf.Graph has neither list.
    runs = [n for n in map(_item_op_name, [*getattr(graph, "outputs", ()), *getattr(graph, "control_outputs", ())]) if n]
    return LoadedGraph(
        graph_def=graph.as_graph_def(),
        train_ops=tuple(dict.fromkeys(train_ops)),
        global_steps=tuple(dict.fromkeys(global_steps)),
        origin="tf.Graph",
        runs=tuple(dict.fromkeys(runs)),
    )


def _from_meta_graph(meta: Any, origin: str) -> LoadedGraph:
    from tensorflow.core.framework import variable_pb2

    train_ops: list[str] = []
    for key in TRAIN_OP_COLLECTIONS:
        if key in meta.collection_def:
            train_ops.extend(op_name_of(v) for v in meta.collection_def[key].node_list.value)
    global_steps: list[str] = []
    if GLOBAL_STEP_COLLECTION in meta.collection_def:
        collection = meta.collection_def[GLOBAL_STEP_COLLECTION]
        for raw in collection.bytes_list.value:
            var = variable_pb2.VariableDef()
            try:
                var.ParseFromString(raw)
            except Exception:  # noqa: BLE001 - a foreign proto in the collection: ignore it, not fatal
                continue
            if var.variable_name:
                global_steps.append(op_name_of(var.variable_name))
        global_steps.extend(op_name_of(v) for v in collection.node_list.value)
    return LoadedGraph(
        graph_def=meta.graph_def,
        train_ops=tuple(dict.fromkeys(train_ops)),
        global_steps=tuple(dict.fromkeys(global_steps)),
        origin=origin,
    )


# ------------------------------------------------------------------- files
def _load_path(path: Path) -> LoadedGraph:
    if not path.exists():
        raise GraphLoadError(f"{path}: no such file or directory (expected {EXPECTED})")
    if path.is_dir():
        return _load_saved_model_dir(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise GraphLoadError(f"{path}: cannot read ({exc.strerror or exc}); expected {EXPECTED}") from exc
    if not data.strip():
        raise GraphLoadError(f"{path}: the file is empty; expected {EXPECTED}")
    suffix = path.suffix.lower()
    attempts: list[tuple[str, Callable[[bytes, Path], LoadedGraph]]]
    if path.name in ("saved_model.pb", "saved_model.pbtxt"):
        text = suffix == ".pbtxt"
        attempts = [("SavedModel", lambda d, p: _parse_saved_model(d, p, text=text))]
    elif suffix == ".meta":
        attempts = [("binary MetaGraphDef", _parse_meta_binary), ("text MetaGraphDef", _parse_meta_text)]
    elif suffix in (".pbtxt", ".txt", ".prototxt", ".textproto"):
        attempts = [("text GraphDef", _parse_graph_text), ("text MetaGraphDef", _parse_meta_text)]
    else:
        attempts = [("binary GraphDef", _parse_graph_binary), ("binary MetaGraphDef", _parse_meta_binary),
                    ("text GraphDef", _parse_graph_text)]
    failures: list[str] = []
    for kind, parse in attempts:
        try:
            return parse(data, path)
        except _NotThisFormat as exc:
            failures.append(f"as {kind}: {exc}")
    raise GraphLoadError(
        f"{path}: not a readable graph ({'; '.join(failures)}); expected {EXPECTED}"
    )


class _NotThisFormat(Exception):
    """Internal: the bytes did not parse (or validate) as one format."""


def _validated(graph_def: Any) -> Any:
    """Protobuf parsing is lenient; a GraphDef we accept must have ops, each
    with a name and a type, and no duplicate names."""
    count = len(graph_def.node)
    if count == 0:
        raise _NotThisFormat("it contains no ops")
    names = set()
    for node in graph_def.node:
        if not node.name or not node.op:
            raise _NotThisFormat("an op without a name or type (corrupt or not a graph)")
        names.add(node.name)
    if len(names) != count:
        raise _NotThisFormat("duplicate op names (corrupt or not a graph)")
    return graph_def


def _parse_binary(message: Any, data: bytes) -> None:
    try:
        message.ParseFromString(data)
    except Exception as exc:  # noqa: BLE001 - DecodeError, RuntimeWarning-as-error, ...: all mean "not this"
        raise _NotThisFormat(str(exc) or type(exc).__name__) from None


def _parse_text(message: Any, data: bytes) -> None:
    from google.protobuf import text_format

    try:
        text_format.Parse(data.decode("utf-8"), message)
    except Exception as exc:  # noqa: BLE001 - ParseError, UnicodeDecodeError
        first_line = (str(exc) or type(exc).__name__).splitlines()[0]
        raise _NotThisFormat(first_line[:200]) from None


def _parse_graph_binary(data: bytes, path: Path) -> LoadedGraph:
    from tensorflow.core.framework import graph_pb2

    graph_def = graph_pb2.GraphDef()
    _parse_binary(graph_def, data)
    return LoadedGraph(graph_def=_validated(graph_def), origin=f"GraphDef file {path}")


def _parse_graph_text(data: bytes, path: Path) -> LoadedGraph:
    from tensorflow.core.framework import graph_pb2

    graph_def = graph_pb2.GraphDef()
    _parse_text(graph_def, data)
    return LoadedGraph(graph_def=_validated(graph_def), origin=f"GraphDef text file {path}")


def _meta(data: bytes, path: Path, parse: Callable[[Any, bytes], None]) -> LoadedGraph:
    from tensorflow.core.protobuf import meta_graph_pb2

    meta = meta_graph_pb2.MetaGraphDef()
    parse(meta, data)
    _validated(meta.graph_def)
    return _from_meta_graph(meta, f"MetaGraphDef file {path}")


def _parse_meta_binary(data: bytes, path: Path) -> LoadedGraph:
    return _meta(data, path, _parse_binary)


def _parse_meta_text(data: bytes, path: Path) -> LoadedGraph:
    return _meta(data, path, _parse_text)


def _parse_saved_model(data: bytes, path: Path, *, text: bool) -> LoadedGraph:
    from tensorflow.core.protobuf import saved_model_pb2

    saved = saved_model_pb2.SavedModel()
    (_parse_text if text else _parse_binary)(saved, data)
    if not saved.meta_graphs:
        raise _NotThisFormat("the SavedModel has no meta graphs")
    # A training graph is what we want; builders tag it "train". Otherwise the
    # first meta graph (usually "serve", which is an inference graph).
    chosen = next((m for m in saved.meta_graphs if "train" in m.meta_info_def.tags), saved.meta_graphs[0])
    _validated(chosen.graph_def)
    tags = ",".join(chosen.meta_info_def.tags) or "none"
    return _from_meta_graph(chosen, f"SavedModel {path.parent} (tags: {tags})")


def _load_saved_model_dir(path: Path) -> LoadedGraph:
    for name, text in (("saved_model.pb", False), ("saved_model.pbtxt", True)):
        candidate = path / name
        if candidate.is_file():
            try:
                return _parse_saved_model(candidate.read_bytes(), candidate, text=text)
            except _NotThisFormat as exc:
                raise GraphLoadError(f"{candidate}: not a readable SavedModel ({exc}); expected {EXPECTED}") from None
    raise GraphLoadError(
        f"{path}: a directory without saved_model.pb or saved_model.pbtxt; expected {EXPECTED}"
    )
