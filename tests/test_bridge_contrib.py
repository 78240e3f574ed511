"""`--tf1`'s tf.contrib: each area served as ModelZoo TF1 scripts call it, with TensorFlow 1.15's meaning.

The mapping is checked in process through the same entry points the import
hook uses (`resolve`, `serve_contrib`), on small graphs run in a Session, so
no test switches this process to TF 1 behaviour. Where contrib's meaning
differs from the TensorFlow 2 name it maps near (losses' argument order,
metrics.accuracy's return, HParams' type rules, image.rotate's direction), the
check is against TensorFlow 1.15's documented result.
"""
from __future__ import annotations

import json
import math
import sys

import numpy as np
import pytest
import tensorflow as tf

from npu_tf_profiling.bridge.launch.contrib.areas import AREAS
from npu_tf_profiling.bridge.launch.contrib.paths import ContribRemovedError, resolve, serve_contrib
from npu_tf_profiling.bridge.launch.contrib.training import HParams
from npu_tf_profiling.bridge.launch.tf1_modules import tf1_name, with_tf1_names

tf1 = tf.compat.v1
contrib = resolve("tensorflow.contrib")


def _run(graph: tf.Graph, fetches, feed=None):
    with tf1.Session(graph=graph) as sess:
        sess.run(tf1.global_variables_initializer())
        return sess.run(fetches, feed)


def test_slim_builds_a_net_under_arg_scope_with_tf_1_15_variable_names() -> None:
    slim = contrib.slim
    assert serve_contrib("tensorflow.contrib", ("slim",)).slim is slim  # from tensorflow.contrib import slim
    assert serve_contrib("tensorflow.contrib.slim.nets", ("resnet_v1",)).resnet_v1.__name__ == "tf_slim.nets.resnet_v1"
    assert resolve("tensorflow.contrib.slim.python.slim.nets.resnet_utils").__name__ == "tf_slim.nets.resnet_utils"
    graph = tf.Graph()
    with graph.as_default():
        images = tf1.placeholder(tf.float32, [2, 8, 8, 3])
        with slim.arg_scope([slim.conv2d, slim.fully_connected], weights_regularizer=slim.l2_regularizer(0.01)):
            net = slim.conv2d(images, 4, [3, 3], scope="conv1")
            net = slim.max_pool2d(net, [2, 2], scope="pool1")
            logits = slim.fully_connected(slim.flatten(net), 10, activation_fn=None, scope="logits")
        names = [v.op.name for v in tf1.global_variables()]
        regularization = tf1.get_collection(tf1.GraphKeys.REGULARIZATION_LOSSES)
    assert names == ["conv1/weights", "conv1/biases", "logits/weights", "logits/biases"]
    assert len(regularization) == 2 and logits.shape.as_list() == [2, 10]


def test_layers_initializers_regularizers_and_batch_norm_as_in_tf_1_15() -> None:
    layers = contrib.layers
    assert resolve("tensorflow.contrib.layers.python.layers") is not None
    deep = serve_contrib("tensorflow.contrib.layers.python.layers", ("initializers", "layers"))
    assert deep.initializers.__name__ == "tf_slim.layers.initializers" and deep.layers.__name__ == "tf_slim.layers.layers"
    assert contrib.layers.python.layers.initializers.xavier_initializer is layers.xavier_initializer
    graph = tf.Graph()
    with graph.as_default():
        weights = tf.constant([[1.0, -2.0], [3.0, 0.5]])
        l2 = layers.l2_regularizer(0.1)(weights)  # 1.15: scale * sum(w^2) / 2
        l1 = layers.l1_regularizer(0.1)(weights)
        x = tf1.placeholder(tf.float32, [4, 3])
        maps = tf.reshape(x, [4, 1, 1, 3])  # 4-D with UPDATE_OPS: tf_slim's BatchNormalization-layer path
        normed = layers.batch_norm(maps, is_training=True, scale=True)
        updates = tf1.get_collection(tf1.GraphKeys.UPDATE_OPS)
        init = tf1.get_variable("w", [64, 32], initializer=layers.xavier_initializer())
        normalized = layers.layer_norm(x)
    values = _run(graph, [l2, l1, normed, init, normalized], {x: np.arange(12, dtype=np.float32).reshape(4, 3)})
    assert values[0] == pytest.approx(0.1 * (1 + 4 + 9 + 0.25) / 2) and values[1] == pytest.approx(0.65)
    assert np.allclose(values[2].mean(axis=0), 0, atol=1e-5) and len(updates) == 2  # moving mean, moving variance
    assert values[2].shape == (4, 1, 1, 3)
    assert np.abs(values[3]).max() <= math.sqrt(6 / (64 + 32)) + 1e-6  # glorot uniform's limit
    assert np.allclose(values[4].mean(axis=1), 0, atol=1e-5)


def test_framework_arg_scope_is_the_function_not_tf_slims_module_of_that_name() -> None:
    framework = contrib.framework
    deep = serve_contrib("tensorflow.contrib.framework.python.ops", ("arg_scope", "add_arg_scope", "variables"))
    assert callable(framework.arg_scope) and deep.arg_scope is framework.arg_scope  # tf_slim.ops.variables.arg_scope is a module
    assert deep.variables.__name__ == "tf_slim.ops.variables"

    @framework.add_arg_scope
    def scaled(x, factor=1.0):
        return x * factor

    with framework.arg_scope([scaled], factor=3.0):
        assert scaled(2.0) == 6.0
    assert framework.nest.flatten({"b": [1, 2], "a": 3}) == [3, 1, 2] and framework.nest.is_sequence([1])
    graph = tf.Graph()
    with graph.as_default(), tf1.variable_scope("block"):
        tf1.get_variable("kernel", [1])
        assert framework.get_name_scope() == "block"
        assert [v.op.name for v in framework.get_variables_by_name("kernel")] == ["block/kernel"]
    with graph.as_default():
        assert framework.get_or_create_global_step().op.name == "global_step"


def test_losses_and_metrics_keep_contribs_argument_order_and_results() -> None:
    graph = tf.Graph()
    with graph.as_default():
        logits = tf.constant([[2.0, 0.5, -1.0], [0.1, 0.2, 3.0]])
        onehot = tf.constant([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
        contrib_loss = contrib.losses.softmax_cross_entropy(logits, onehot)  # contrib: logits first
        core_loss = tf1.losses.softmax_cross_entropy(onehot, logits)  # tf.losses: labels first
        accuracy = contrib.metrics.accuracy(tf.constant([1, 2, 3]), tf.constant([1, 2, 0]))
    values = _run(graph, [contrib_loss, core_loss, accuracy])
    assert values[0] == pytest.approx(values[1])
    assert values[2] == pytest.approx(2 / 3)  # a tensor, not (value, update_op) as tf.metrics.accuracy


def test_data_maps_to_tf_data_experimental_and_keeps_batch_and_drop_remainder() -> None:
    data = contrib.data
    assert data.AUTOTUNE == tf.data.experimental.AUTOTUNE and data.map_and_batch is tf1.data.experimental.map_and_batch
    graph = tf.Graph()
    with graph.as_default():
        dataset = tf.data.Dataset.range(10).apply(data.batch_and_drop_remainder(4))
        mapped = tf.data.Dataset.range(6).apply(data.map_and_batch(lambda x: x * 2, 3))
        interleaved = tf.data.Dataset.range(2).apply(
            data.parallel_interleave(lambda x: tf.data.Dataset.from_tensors(x).repeat(2), cycle_length=2))
        batches = [tf1.data.make_one_shot_iterator(d).get_next() for d in (dataset, mapped, interleaved)]
        assert batches[0].shape.as_list() == [4]  # static: the remainder is dropped
        with tf1.Session() as sess:
            assert [sess.run(batches[0]).tolist() for _ in range(2)] == [[0, 1, 2, 3], [4, 5, 6, 7]]
            with pytest.raises(tf.errors.OutOfRangeError):
                sess.run(batches[0])
            assert sess.run(batches[1]).tolist() == [0, 2, 4]
            assert sorted(sess.run(batches[2]) for _ in range(4)) == [0, 0, 1, 1]


def test_rnn_cells_lstm_block_cell_and_stacked_bidirectional_rnn() -> None:
    rnn = contrib.rnn
    assert rnn.MultiRNNCell is tf1.nn.rnn_cell.MultiRNNCell and rnn.LSTMStateTuple is tf1.nn.rnn_cell.LSTMStateTuple
    graph = tf.Graph()
    with graph.as_default():
        inputs = tf.constant(np.random.default_rng(0).normal(size=(2, 5, 3)), tf.float32)
        initializer = tf1.constant_initializer(0.1)
        with tf1.variable_scope("block", initializer=initializer):
            block, _ = tf1.nn.dynamic_rnn(rnn.LSTMBlockCell(4), inputs, dtype=tf.float32)
        with tf1.variable_scope("plain", initializer=initializer):
            plain, _ = tf1.nn.dynamic_rnn(tf1.nn.rnn_cell.LSTMCell(4, forget_bias=1.0), inputs, dtype=tf.float32)
        outputs, states_fw, states_bw = rnn.stack_bidirectional_dynamic_rnn(
            [rnn.GRUCell(3), rnn.GRUCell(3)], [rnn.GRUCell(3), rnn.GRUCell(3)], inputs, dtype=tf.float32)
        names = {v.op.name for v in tf1.trainable_variables()}
    assert "stack_bidirectional_rnn/cell_1/bidirectional_rnn/bw/gru_cell/candidate/kernel" in names
    assert {"block/rnn/lstm_cell/kernel", "block/rnn/lstm_cell/bias"} <= names
    assert outputs.shape.as_list() == [2, 5, 6] and len(states_fw) == len(states_bw) == 2
    block_out, plain_out = _run(graph, [block, plain])
    assert np.allclose(block_out, plain_out)  # the fused cell computed LSTMCell's formula


def test_hparams_parse_and_type_rules_of_tensorflow_1_15() -> None:
    training = contrib.training
    assert training.HParams is HParams and callable(training.checkpoints_iterator)  # tf_slim.training's loops
    hparams = HParams(learning_rate=0.1, batch_size=32, layers=[64, 32], use_bn=True, optimizer="adam")
    hparams.parse("learning_rate=3,batch_size=64,layers=[8, 4, 2],use_bn=false,optimizer=sgd")
    assert hparams.values() == {"learning_rate": 3.0, "batch_size": 64, "layers": [8, 4, 2], "use_bn": False,
                                "optimizer": "sgd"}
    assert isinstance(hparams.learning_rate, float) and hparams.parse("use_bn=1").use_bn is True
    for bad, message in (("batch_size=2.5", "Could not parse hparam 'batch_size'"), ("dropout=0.1", "Unknown hyperparameter"),
                         ("batch_size=[1,2]", "Must not pass a list"), ("learning_rate", "Malformed hyperparameter")):
        with pytest.raises(ValueError, match=message):
            hparams.parse(bad)
    with pytest.raises(ValueError, match="Could not cast hparam 'batch_size'"):
        hparams.set_hparam("batch_size", 2.5)  # a float never becomes an int
    with pytest.raises(ValueError, match="reserved"):
        hparams.add_hparam("parse", 1)
    restored = HParams(**{k: v for k, v in hparams.values().items()}).parse_json(json.dumps({"batch_size": 7}))
    assert restored.batch_size == 7 and json.loads(hparams.to_json())["layers"] == [8, 4, 2]
    assert hparams.get("missing", 5) == 5 and "batch_size" in hparams
    assert str(HParams(b=1, a=2)) == "[('a', 2), ('b', 1)]"


def test_feeding_queue_runner_fills_a_queue_from_python_in_a_real_session() -> None:
    """ADDA's input code: a FIFOQueue filled by a FeedingQueueRunner thread feeding a generator's values."""
    from tensorflow_estimator.python.estimator.inputs.queues.feeding_queue_runner import _FeedingQueueRunner

    runner_class = contrib.training.FeedingQueueRunner
    assert runner_class is _FeedingQueueRunner
    deep = serve_contrib("tensorflow.contrib.training.python.training.feeding_queue_runner", ("FeedingQueueRunner",))
    assert deep.FeedingQueueRunner is runner_class and "FeedingQueueRunner" in dir(contrib.training)
    graph = tf.Graph()
    with graph.as_default():
        image = tf1.placeholder(tf.float32, [2])
        label = tf1.placeholder(tf.int32, [])
        queue = tf1.FIFOQueue(4, [tf.float32, tf.int32], shapes=[[2], []])
        enqueue = queue.enqueue([image, label])

        def feed():  # endless, as ADDA's `ImageDataset.feed(epochs=None)`
            step = 0
            while True:
                yield {image: [step, -step], label: step}
                step += 1
        runner = runner_class(queue, [enqueue], feed_fns=[feed().__next__])
        tf1.train.add_queue_runner(runner)
        dequeued = queue.dequeue()
        with tf1.Session() as sess:
            coordinator = tf1.train.Coordinator()
            threads = tf1.train.start_queue_runners(sess, coord=coordinator)
            pairs = [sess.run(dequeued) for _ in range(6)]
            coordinator.request_stop()
            coordinator.join(threads, stop_grace_period_secs=5)  # the stop cancels the blocked enqueue: threads end
    assert [(values.tolist(), int(step)) for values, step in pairs] == [([s, -s], s) for s in range(6)]


def test_feeding_queue_runner_without_tensorflow_estimator_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    from npu_tf_profiling.bridge.launch.contrib import feeding_queue_runner

    monkeypatch.setitem(sys.modules, "tensorflow_estimator.python.estimator.inputs.queues.feeding_queue_runner", None)
    with pytest.raises(ModuleNotFoundError, match=r"FeedingQueueRunner is served from tensorflow-estimator.*pip install"):
        feeding_queue_runner.FeedingQueueRunner
    training_area = AREAS["tensorflow.contrib.training"]  # looked up anew: the area's other names do not need it
    assert training_area.lookup("HParams") is HParams and callable(training_area.lookup("checkpoints_iterator"))
    with pytest.raises(AttributeError):
        feeding_queue_runner.QueueRunner


def test_image_rotate_translate_and_transform_as_contrib_image() -> None:
    image = contrib.image
    assert resolve("tensorflow.contrib.image.python.ops.image_ops") is sys.modules["npu_tf_profiling.bridge.launch.contrib.image"]
    picture = np.arange(9, dtype=np.float32).reshape(3, 3)
    graph = tf.Graph()
    with graph.as_default():
        rotated = image.rotate(picture[:, :, None], math.pi / 2)  # counterclockwise
        shifted = image.translate(picture[None, :, :, None], [1, 0])  # one pixel right, zeros come in
        composed = image.transform(picture, image.compose_transforms(image.translations_to_projective_transforms([1, 0]),
                                                                     image.translations_to_projective_transforms([0, 1])))
    rotated, shifted, composed = _run(graph, [rotated, shifted, composed])
    assert np.array_equal(rotated[:, :, 0], np.rot90(picture))
    assert np.array_equal(shifted[0, :, :, 0], [[0, 0, 1], [0, 3, 4], [0, 6, 7]])
    assert np.array_equal(composed, [[0, 0, 0], [0, 0, 1], [0, 3, 4]])


def test_small_areas_map_to_their_tensorflow_2_or_npu_bridge_homes() -> None:
    from npu_tf_profiling.bridge.npu_bridge.loss_scale import NPULossScaleOptimizer

    assert contrib.util.constant_value(tf.constant([1, 2])).tolist() == [1, 2]
    assert contrib.learn.ModeKeys.INFER == tf.estimator.ModeKeys.PREDICT and contrib.learn.ModeKeys.TRAIN == "train"
    assert resolve("tensorflow.contrib.learn.python.learn.datasets.mnist").DataSet.__name__ == "DataSet"
    assert contrib.mixed_precision.LossScaleOptimizer is NPULossScaleOptimizer
    assert contrib.cluster_resolver.TPUClusterResolver is tf.distribute.cluster_resolver.TPUClusterResolver
    assert contrib.distribute.MirroredStrategy is tf1.distribute.MirroredStrategy
    assert resolve("tensorflow.contrib.framework.python.ops.audio_ops").decode_wav is not None
    assert tf1_name("tensorflow_core.python.tools") == "tensorflow.python.tools" and tf1_name("tensorflow_x") == "tensorflow_x"


def test_old_ascend_paths_under_contrib_are_npu_bridge(monkeypatch: pytest.MonkeyPatch) -> None:
    from npu_tf_profiling import install_npu_bridge_alias

    monkeypatch.setattr(sys, "path", list(sys.path))
    install_npu_bridge_alias()
    optimizer = serve_contrib("tensorflow.contrib.offline_train.python.npu.npu_optimizer", ("NPUDistributedOptimizer",))
    hccl = serve_contrib("tensorflow.contrib.hccl.python.ops", ("hccl_ops",))
    assert optimizer.__name__ == "npu_bridge.estimator.npu.npu_optimizer" and callable(hccl.hccl_ops.allreduce)


def test_areas_without_a_replacement_import_and_name_what_to_use_when_used() -> None:
    tpu = serve_contrib("tensorflow.contrib", ("tpu",)).tpu  # `from tensorflow.contrib import tpu`: a TPU-capable script
    with pytest.raises(ContribRemovedError, match=r"tf\.contrib\.tpu\.TPUDistributionStrategy: .*NPURunConfig"):
        tpu.TPUDistributionStrategy
    with pytest.raises(ImportError, match=r"^tf\.contrib\.tpu\.bfloat16_scope: not in TensorFlow 2"):
        serve_contrib("tensorflow.contrib.tpu", ("bfloat16_scope",))
    with pytest.raises(ImportError, match=r"^tf\.contrib\.tpu\.python\.tpu\.keras_support: .*NPURunConfig"):
        serve_contrib("tensorflow.contrib.tpu.python.tpu", ("keras_support",))  # contrib-only: TensorFlow 2 has none
    with pytest.raises(ContribRemovedError, match=r"tf\.contrib\.rnn\.NASCell: .*tf\.nn\.rnn_cell"):
        contrib.rnn.NASCell
    with pytest.raises(ImportError, match=r"tf\.contrib\.seq2seq\.dynamic_decode: .*tensorflow_addons\.seq2seq"):
        serve_contrib("tensorflow.contrib.seq2seq", ("dynamic_decode",))
    with pytest.raises(ContribRemovedError, match=r"tf\.contrib\.nonesuch: .*migration guide"):
        contrib.nonesuch
    assert not any(name.startswith("tensorflow.contrib") for name in sys.modules)  # libraries still see TensorFlow 2


def test_tf_1_15_names_are_overlays_for_the_script_and_the_real_modules_stay_tensorflow_2() -> None:
    import tensorflow.python.framework as framework
    import tensorflow.python.framework.graph_util as real_graph_util
    import tensorflow.python.keras.optimizers as real_optimizers

    served = with_tf1_names(framework, ("graph_util", "ops")).graph_util
    optimizers = with_tf1_names(real_optimizers, ("SGD", "Adam"))
    assert optimizers.SGD.__module__ == "tensorflow.python.keras.optimizer_v2.gradient_descent"
    assert optimizers.get is real_optimizers.get and not hasattr(real_optimizers, "SGD")
    assert not hasattr(real_graph_util, "convert_variables_to_constants") and framework.graph_util is real_graph_util
    assert with_tf1_names(framework, ("dtypes",)) is framework  # nothing to add: the module itself
    import tensorflow.python.keras.utils as keras_utils

    with pytest.raises(NotImplementedError, match="MirroredStrategy"):
        with_tf1_names(keras_utils, ("multi_gpu_model",)).multi_gpu_model(None, gpus=2)
    assert with_tf1_names(framework, ("ops",)).ops.Tensor is tf.Tensor  # moved in TensorFlow 2.14
    graph = tf.Graph()
    with graph.as_default():
        weights = tf1.Variable([1.0, 2.0], name="w")
        tf.identity(weights * 2, name="y")
        with tf1.Session() as sess:
            sess.run(tf1.global_variables_initializer())
            frozen = served.convert_variables_to_constants(sess, graph.as_graph_def(), ["y"])
    assert "w" in [node.name for node in frozen.node if node.op == "Const"]
    assert not [node.name for node in frozen.node if node.op.startswith("Variable")]


def test_star_imports_bind_the_served_names() -> None:
    namespace: dict = {}
    exec("from tensorflow.contrib.layers import *", {"__builtins__": {"__import__": _contrib_import}}, namespace)
    assert namespace["convolution2d"] is contrib.layers.convolution2d and "optimize_loss" in namespace
    assert "xavier_initializer" in namespace and "absolute_import" not in namespace and "ops" not in namespace
    rnn: dict = {}
    exec("from tensorflow.contrib.rnn import *", {"__builtins__": {"__import__": _contrib_import}}, rnn)
    assert rnn["LSTMBlockCell"] is contrib.rnn.LSTMBlockCell


def _contrib_import(name, globals=None, locals=None, fromlist=(), level=0):
    return serve_contrib(name, fromlist)


def test_tpu_serves_the_estimator_tpu_names_and_the_rest_names_what_to_use() -> None:
    tpu = contrib.tpu
    assert tpu.InputPipelineConfig.PER_HOST_V2 == tf1.estimator.tpu.InputPipelineConfig.PER_HOST_V2
    assert tpu.TPUEstimator is tf1.estimator.tpu.TPUEstimator and tpu.RunConfig is tf1.estimator.tpu.RunConfig
    deep = serve_contrib("tensorflow.contrib.tpu.python.tpu", ("tpu_config", "tpu_function"))
    assert deep.tpu_config.TPUConfig is tpu.TPUConfig and deep.tpu_function.get_tpu_context().number_of_shards is None
    with pytest.raises(ContribRemovedError, match=r"tf\.contrib\.tpu\.CrossShardOptimizer: .*NPURunConfig"):
        tpu.CrossShardOptimizer


def test_summary_serves_tensorflow_2_summaries_with_contribs_global_step_default(tmp_path) -> None:
    summary = contrib.summary
    assert summary.all_summary_ops is tf1.summary.all_v2_summary_ops
    graph = tf.Graph()
    with graph.as_default():
        writer = summary.create_file_writer(str(tmp_path))
        with writer.as_default(), summary.always_record_summaries():
            summary.scalar("loss", tf.constant(1.5), family="train")
        ops = summary.all_summary_ops()
        with tf1.Session() as sess:
            sess.run(tf1.global_variables_initializer())
            sess.run(writer.init())
            sess.run(ops)
            sess.run(writer.flush())
    assert len(ops) == 1 and list(tmp_path.iterdir())


def test_deep_paths_of_flat_areas_resolve_to_the_area() -> None:
    rnn_cell = resolve("tensorflow.contrib.rnn.python.ops.rnn_cell")
    assert rnn_cell.LSTMCell is contrib.rnn.LSTMCell
    assert serve_contrib("tensorflow.contrib.rnn.python.ops", ("core_rnn_cell",)).core_rnn_cell.GRUCell is contrib.rnn.GRUCell
    gen = serve_contrib("tensorflow.contrib.image.ops", ("gen_image_ops",)).gen_image_ops
    assert callable(gen.image_projective_transform_v2)
    with pytest.raises(ContribRemovedError, match=r"tf\.contrib\.rnn\.NASCell"):
        contrib.rnn.NASCell  # a deep module is not made up for a missing name
