"""Small real TensorFlow training graphs, shared by the tests.

Every builder returns a fresh ``tf.Graph`` built in graph mode
(``with graph.as_default()``), never touching the process-wide eager switch,
so other tests in the same process are unaffected. Op names are deterministic
(explicit layer names), so tests can assert fp/bp by name.

Nothing here runs a session except ``write_saved_model`` (a SavedModel needs
variable values).
"""
from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Callable, Iterator

import numpy as np
import tensorflow as tf

tf1 = tf.compat.v1

FEATURES = 8
CLASSES = 3
BATCH = 4

OPTIMIZERS: dict[str, Callable[[], tf1.train.Optimizer]] = {
    "sgd": lambda: tf1.train.GradientDescentOptimizer(0.1),
    "momentum": lambda: tf1.train.MomentumOptimizer(0.1, 0.9),
    "adam": lambda: tf1.train.AdamOptimizer(1e-3),
}
# The op each v1 optimizer returns from minimize(global_step=...): the global-step increment.
OPTIMIZER_TRAIN_OP = {"sgd": "GradientDescent", "momentum": "Momentum", "adam": "Adam"}


def dataset_batch(feature_shape: tuple[int, ...] = (FEATURES,), labels_first: bool = False,
                  name: str | None = None) -> tuple[tf.Tensor, tf.Tensor]:
    """(features, labels) from a one-shot tf.data iterator; with
    ``labels_first`` the dataset yields (labels, features), so the labels are
    IteratorGetNext:0."""
    features = np.zeros((BATCH,) + feature_shape, np.float32)
    labels = np.zeros((BATCH,), np.int64)
    pair = (labels, features) if labels_first else (features, labels)
    dataset = tf.data.Dataset.from_tensors(pair).repeat()
    with tf1.name_scope(name):
        first, second = tf1.data.make_one_shot_iterator(dataset).get_next()
    return (second, first) if labels_first else (first, second)


def _mlp_logits(features: tf.Tensor) -> tf.Tensor:
    hidden = tf1.layers.dense(features, 16, activation=tf.nn.relu, name="hidden")
    return tf1.layers.dense(hidden, CLASSES, name="logits")


def _loss(labels: tf.Tensor, logits: tf.Tensor) -> tf.Tensor:
    return tf1.losses.sparse_softmax_cross_entropy(labels, logits)


def mlp_graph(optimizer: str = "sgd") -> tf.Graph:
    """tf.compat.v1.layers MLP (hidden, logits) fed by a tf.data iterator."""
    graph = tf.Graph()
    with graph.as_default():
        features, labels = dataset_batch()
        loss = _loss(labels, _mlp_logits(features))
        OPTIMIZERS[optimizer]().minimize(loss, global_step=tf1.train.get_or_create_global_step())
    return graph


def cnn_graph(optimizer: str = "sgd") -> tf.Graph:
    """Reshape -> conv -> max-pool -> flatten -> dense, fed flat images. The
    reshape's batch size is computed from the data's shape (Shape ->
    StridedSlice -> Pack), compute ops on metadata that come first."""
    graph = tf.Graph()
    with graph.as_default():
        features, labels = dataset_batch((64,))
        batch = tf.shape(features, name="batch_shape")[0]
        images = tf.reshape(features, tf.stack([batch, 8, 8, 1]))
        conv = tf1.layers.conv2d(images, 4, 3, activation=tf.nn.relu, name="conv")
        pooled = tf1.layers.max_pooling2d(conv, 2, 2, name="pool")
        logits = tf1.layers.dense(tf1.layers.flatten(pooled), CLASSES, name="logits")
        OPTIMIZERS[optimizer]().minimize(_loss(labels, logits), global_step=tf1.train.get_or_create_global_step())
    return graph


def sparse_embedding_graph() -> tf.Graph:
    """An embedding table as a ref variable (TF1 scripts' default), fed ids and values, under TF1 Adam.

    Adam's sparse update of a ref variable is ``AssignSub(var, lr * m_t / ...)`` with ``m_t`` a
    ``ScatterAdd`` of the gradient's values into a slot (AutoInt_ID0189's embedding, issue 42).
    """
    graph = tf.Graph()
    with graph.as_default():
        ids = tf1.placeholder(tf.int32, [None, 7], name="feat_index")
        values = tf1.placeholder(tf.float32, [None, 7, 1], name="feat_value")
        table = tf1.get_variable("feature_embeddings", [100, 8], use_resource=False)
        embedded = tf.nn.embedding_lookup(table, ids) * values
        hidden = tf1.layers.dense(tf.reshape(embedded, [-1, 56]), 16, activation=tf.nn.relu, name="hidden")
        loss = tf.reduce_mean(tf.square(tf1.layers.dense(hidden, 1, name="out")))
        tf1.train.AdamOptimizer(1e-3).minimize(loss, name="train_op")
    return graph


def feed_dict_graph() -> tf.Graph:
    """Placeholders for features, labels, a scalar learning rate and a scalar
    keep_prob, plus Keras-style PlaceholderWithDefault flag: only x and y are
    batches."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf1.placeholder(tf.float32, [None, FEATURES], name="x")
        y = tf1.placeholder(tf.int64, [None], name="y")
        learning_rate = tf1.placeholder(tf.float32, [], name="learning_rate")
        keep_prob = tf1.placeholder(tf.float32, [], name="keep_prob")
        tf1.placeholder_with_default(False, [], name="is_training")
        hidden = tf1.layers.dense(x, 16, activation=tf.nn.relu, name="hidden")
        hidden = tf1.nn.dropout(hidden, keep_prob=keep_prob)
        logits = tf1.layers.dense(hidden, CLASSES, name="logits")
        tf1.train.GradientDescentOptimizer(learning_rate).minimize(_loss(y, logits), name="train")
    return graph


def labels_first_graph(use_placeholders: bool = False) -> tf.Graph:
    """Labels enter before features (IteratorGetNext:0 / the first
    Placeholder) and are turned into one-hot by a compute op that comes
    before the first layer in graph order."""
    graph = tf.Graph()
    with graph.as_default():
        if use_placeholders:
            labels = tf1.placeholder(tf.int64, [None], name="labels")
            features = tf1.placeholder(tf.float32, [None, 64], name="features")
        else:
            features, labels = dataset_batch((64,), labels_first=True)
        one_hot = tf.one_hot(labels, CLASSES, name="one_hot")
        images = tf.reshape(features, [-1, 8, 8, 1])
        conv = tf1.layers.conv2d(images, 4, 3, activation=tf.nn.relu, name="conv")
        logits = tf1.layers.dense(tf1.layers.flatten(conv), CLASSES, name="logits")
        loss = tf1.losses.softmax_cross_entropy(one_hot, logits)
        tf1.train.MomentumOptimizer(0.1, 0.9).minimize(loss, global_step=tf1.train.get_or_create_global_step())
    return graph


def keras_application_graph(application: str) -> tuple[tf.Graph, str]:
    """tf.keras.applications model (weights=None, 32x32 inputs, 10 classes)
    called on an iterator batch, trained with a tf.compat.v1 optimizer.
    Returns the graph and the model's name (the scope of its ops)."""
    graph = tf.Graph()
    with graph.as_default():
        features, labels = dataset_batch((32, 32, 3))
        constructor = getattr(tf.keras.applications, application)
        model = constructor(weights=None, input_shape=(32, 32, 3), classes=10, classifier_activation=None)
        logits = model(features, training=True)
        loss = tf1.losses.sparse_softmax_cross_entropy(labels, logits)
        tf1.train.MomentumOptimizer(0.01, 0.9).minimize(
            loss, var_list=model.trainable_variables, global_step=tf1.train.get_or_create_global_step())
    return graph, model.name


@contextlib.contextmanager
def control_flow_version(v2: bool) -> Iterator[None]:
    """Build with control flow v1 or v2, restoring the process-wide setting."""
    was_v2 = tf1.control_flow_v2_enabled()
    (tf1.enable_control_flow_v2 if v2 else tf1.disable_control_flow_v2)()
    try:
        yield
    finally:
        (tf1.enable_control_flow_v2 if was_v2 else tf1.disable_control_flow_v2)()


def control_flow_graph(v2: bool, loop_first: bool = False) -> tf.Graph:
    """A tf.while_loop (three tanh(h @ w) steps) and a tf.cond inside the
    model; with ``loop_first`` the batch goes straight into the loop."""
    graph = tf.Graph()
    with control_flow_version(v2), graph.as_default():
        features, labels = dataset_batch()
        h = features if loop_first else tf1.layers.dense(features, FEATURES, name="dense_in")
        w = tf1.get_variable("loop_w", [FEATURES, FEATURES])

        def body(i: tf.Tensor, h: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
            return i + 1, tf.tanh(tf.matmul(h, w))

        _, h = tf.while_loop(lambda i, h: i < 3, body, [tf.constant(0), h], name="loop")
        h = tf.cond(tf.reduce_mean(h) > 0.0, lambda: h * 2.0, lambda: h - 1.0, name="branch")
        logits = tf1.layers.dense(h, CLASSES, name="logits")
        tf1.train.AdamOptimizer(1e-3).minimize(_loss(labels, logits), global_step=tf1.train.get_or_create_global_step())
    return graph


def clipped_graph() -> tf.Graph:
    """compute_gradients -> clip_by_global_norm -> apply_gradients."""
    graph = tf.Graph()
    with graph.as_default():
        features, labels = dataset_batch()
        loss = _loss(labels, _mlp_logits(features))
        optimizer = tf1.train.AdamOptimizer(1e-3)
        grads, variables = zip(*optimizer.compute_gradients(loss))
        clipped, _ = tf.clip_by_global_norm(grads, 1.0)
        optimizer.apply_gradients(zip(clipped, variables), global_step=tf1.train.get_or_create_global_step())
    return graph


def collective_graph(interleaved: bool = False) -> tf.Graph:
    """CollectiveReduceV2 all-reduces between the gradients and the updates
    (built, never run). With ``interleaved`` the logits gradients are
    computed and reduced first, then the hidden-layer gradients (a second
    ``gradients_1/`` scope): two all-reduce groups."""
    graph = tf.Graph()
    with graph.as_default():
        features, labels = dataset_batch()
        loss = _loss(labels, _mlp_logits(features))
        optimizer = tf1.train.GradientDescentOptimizer(0.1)
        variables = tf1.trainable_variables()
        counter = iter(range(1, 100))

        def all_reduce(grad: tf.Tensor) -> tf.Tensor:
            key = next(counter)
            return tf.raw_ops.CollectiveReduceV2(
                input=grad, group_size=2, group_key=1, instance_key=key, ordering_token=[],
                merge_op="Add", final_op="Div", name=f"allreduce_{key}")

        if interleaved:
            late = [v for v in variables if v.name.startswith("logits/")]
            early = [v for v in variables if v.name.startswith("hidden/")]
            reduced = [all_reduce(g) for g in tf.gradients(loss, late)]
            reduced += [all_reduce(g) for g in tf.gradients(loss, early)]
            pairs = list(zip(reduced, late + early))
        else:
            grads = tf.gradients(loss, variables)
            pairs = [(all_reduce(g), v) for g, v in zip(grads, variables)]
        optimizer.apply_gradients(pairs, global_step=tf1.train.get_or_create_global_step())
    return graph


def horovod_graph_def() -> tf.compat.v1.GraphDef:
    """What ``hvd.DistributedOptimizer`` builds, without Horovod installed:
    one HorovodAllreduce per gradient followed by a divide by the size. The
    graph is built with Identity ops in their place whose NodeDefs are then
    retyped to HorovodAllreduce."""
    graph = tf.Graph()
    with graph.as_default():
        features, labels = dataset_batch()
        loss = _loss(labels, _mlp_logits(features))
        optimizer = tf1.train.GradientDescentOptimizer(0.1)
        grads_and_vars = optimizer.compute_gradients(loss)
        averaged = []
        with tf1.name_scope("DistributedGradientDescentOptimizer_Allreduce"):
            for k, (grad, var) in enumerate(grads_and_vars):
                summed = tf.identity(grad, name=f"HorovodAllreduce_{k}")
                averaged.append((tf.math.truediv(summed, 2.0, name=f"truediv_{k}"), var))
        optimizer.apply_gradients(averaged, global_step=tf1.train.get_or_create_global_step())
    graph_def = graph.as_graph_def()
    for node in graph_def.node:
        if "/HorovodAllreduce_" in node.name:
            node.op = "HorovodAllreduce"
            node.attr["reduce_op"].i = 1
    return graph_def


def inference_graph() -> tf.Graph:
    """The MLP forward pass only: no optimizer."""
    graph = tf.Graph()
    with graph.as_default():
        features, _ = dataset_batch()
        tf.nn.softmax(_mlp_logits(features), name="probabilities")
    return graph


def test_tower_graph() -> tf.Graph:
    """A test iterator and a test tower sharing the weights, built *before*
    the training tower (so their ops come first in graph order), plus the
    training tower and its optimizer. Only the training ops feed the train op."""
    graph = tf.Graph()
    with graph.as_default():
        test_features, test_labels = dataset_batch(name="test_data")
        train_features, train_labels = dataset_batch(name="train_data")
        with tf1.variable_scope("model"):
            test_logits = _mlp_logits(test_features)
        with tf1.variable_scope("model", reuse=True):
            train_logits = _mlp_logits(train_features)
        tf1.metrics.accuracy(test_labels, tf.argmax(test_logits, 1), name="test_accuracy")
        loss = _loss(train_labels, train_logits)
        tf1.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=tf1.train.get_or_create_global_step())
    return graph


def estimator_queue_graph(num_epochs: int | None) -> tf.Graph:
    """Estimator's numpy_input_fn queue pipeline: num_epochs=None gives a
    shuffling QueueDequeueManyV2, num_epochs=1 a QueueDequeueUpToV2."""
    graph = tf.Graph()
    with graph.as_default():
        x = np.zeros((16, FEATURES), np.float32)
        y = np.zeros((16,), np.int64)
        input_fn = tf1.estimator.inputs.numpy_input_fn(
            {"x": x}, y, batch_size=BATCH, shuffle=num_epochs is None, num_epochs=num_epochs)
        features, labels = input_fn()
        loss = _loss(labels, _mlp_logits(features["x"]))
        tf1.train.AdagradOptimizer(0.1).minimize(loss, global_step=tf1.train.get_or_create_global_step())
    return graph


def optional_graph(v2: bool) -> tf.Graph:
    """get_next_as_optional() + a cond on has_value(), as end-of-data-aware
    input loops do."""
    graph = tf.Graph()
    with control_flow_version(v2), graph.as_default():
        dataset = tf.data.Dataset.from_tensors(np.zeros((BATCH, FEATURES), np.float32)).repeat()
        iterator = tf1.data.make_initializable_iterator(dataset)
        optional = iterator.get_next_as_optional()
        features = tf.cond(optional.has_value(), optional.get_value,
                           lambda: tf.zeros((BATCH, FEATURES)), name="maybe_batch")
        features.set_shape((BATCH, FEATURES))
        loss = tf.reduce_mean(tf.square(tf1.layers.dense(features, 1, name="regression")), name="loss")
        tf1.train.GradientDescentOptimizer(0.1).minimize(loss, name="train")
    return graph


def accumulation_graph() -> tf.Graph:
    """Gradient accumulation: every step adds the gradients into
    accumulators; the optimizer applies them inside a tf.cond every 2nd step."""
    graph = tf.Graph()
    with graph.as_default():
        features, labels = dataset_batch()
        loss = _loss(labels, _mlp_logits(features))
        optimizer = tf1.train.GradientDescentOptimizer(0.1)
        variables = tf1.trainable_variables()
        grads = tf.gradients(loss, variables)
        step = tf1.train.get_or_create_global_step()
        accumulators = [tf1.Variable(tf.zeros_like(v), trainable=False, name=f"accum_{k}")
                        for k, v in enumerate(variables)]
        accumulate = [a.assign_add(g, name=f"accumulate_{k}") for k, (a, g) in enumerate(zip(accumulators, grads))]
        with tf.control_dependencies(accumulate):
            apply = tf.cond(
                tf.equal(tf.math.floormod(step, 2), 1),
                lambda: tf.group(optimizer.apply_gradients(zip([a.read_value() for a in accumulators], variables))),
                tf.no_op)
        with tf.control_dependencies([apply]):
            tf.group(step.assign_add(1), name="train_op")
    return graph


def write_graph_files(graph: tf.Graph, directory: Path) -> dict[str, Path]:
    """The graph as .pbtxt, .pb (GraphDefs, no collections) and .meta
    (MetaGraphDef with the train_op collection)."""
    directory.mkdir(parents=True, exist_ok=True)
    graph_def = graph.as_graph_def()
    tf1.train.write_graph(graph_def, str(directory), "graph.pbtxt", as_text=True)
    tf1.train.write_graph(graph_def, str(directory), "graph.pb", as_text=False)
    with graph.as_default():  # export_meta_graph refuses to run eagerly
        tf1.train.export_meta_graph(filename=str(directory / "model.meta"), graph=graph)
    return {"pbtxt": directory / "graph.pbtxt", "pb": directory / "graph.pb", "meta": directory / "model.meta"}


def write_saved_model(graph: tf.Graph, directory: Path, tags: tuple[str, ...] = ("train",)) -> Path:
    """A TF1 SavedModel of ``graph`` (variables initialised, then saved)."""
    with graph.as_default(), tf1.Session(graph=graph) as session:
        session.run(tf1.global_variables_initializer())
        builder = tf1.saved_model.Builder(str(directory))
        builder.add_meta_graph_and_variables(session, list(tags))
        builder.save()
    return directory


def loss_scale_graph(v2: bool) -> tf.Graph:
    """tf.compat.v1 dynamic loss scaling: the loss is scaled, the gradients
    unscaled (Mul by 1/scale), checked for finiteness, and the optimizer is
    applied inside a tf.cond. With control flow v2 the Apply ops live in the
    cond's function body and only the If op is visible."""
    graph = tf.Graph()
    with control_flow_version(v2), graph.as_default():
        features, labels = dataset_batch()
        loss = _loss(labels, _mlp_logits(features))
        optimizer = tf1.mixed_precision.MixedPrecisionLossScaleOptimizer(
            tf1.train.GradientDescentOptimizer(0.1), "dynamic")
        optimizer.minimize(loss, global_step=tf1.train.get_or_create_global_step())
    return graph


def gradient_tape_graph() -> tf.Graph:
    """A Keras Sequential model trained with tf.GradientTape in graph mode and a
    Keras (legacy) momentum optimizer: gradient_tape/ scope, ResourceApplyKerasMomentum
    updates, and the optimizer's iteration counter increment as the step."""
    graph = tf.Graph()
    with graph.as_default():
        features, labels = dataset_batch()
        model = tf.keras.Sequential([tf.keras.layers.Dense(16, activation="relu", name="d1"),
                                     tf.keras.layers.Dense(CLASSES, name="d2")])
        with tf.GradientTape() as tape:
            logits = model(features)
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
        grads = tape.gradient(loss, model.trainable_variables)
        tf.keras.optimizers.legacy.SGD(0.1, momentum=0.9).apply_gradients(zip(grads, model.trainable_variables))
    return graph
