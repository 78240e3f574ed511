"""NPULossScaleOptimizer and the loss-scale managers against plain TensorFlow training, in real graphs."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import types

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from npu_tf_profiling.graph_points import GraphIndex
from npu_tf_profiling.config.session_proto import write_request
from npu_tf_profiling.bridge.npu_bridge.loss_scale import (
    DISTRIBUTED_MODULE,
    ExponentialUpdateLossScaleManager,
    FixedLossScaleManager,
    NPULossScaleOptimizer,
)
from tests.helpers.trace_files import assert_step_trace_formulas, only_prof_dir, step_trace_rows

FEATURES = np.random.RandomState(0).uniform(-1, 1, size=(8, 4)).astype(np.float32)


class Model:
    """A two-layer regression whose input is fed, so a step can be given inf/nan gradients on purpose."""

    def __init__(self, make_optimizer, sparse: bool = False) -> None:
        self.graph = tf.Graph()
        with self.graph.as_default():
            self.x = tf.placeholder(tf.float32, [None, 4])
            init = np.random.RandomState(1)
            self.w1 = tf.get_variable("w1", initializer=init.normal(size=(4, 6)).astype(np.float32))
            self.w2 = tf.get_variable("w2", initializer=init.normal(size=(6, 1)).astype(np.float32))
            hidden = tf.tanh(tf.matmul(self.x, self.w1))
            if sparse:  # an embedding lookup gives an IndexedSlices gradient
                self.table = tf.get_variable("table", initializer=init.normal(size=(10, 6)).astype(np.float32))
                hidden = hidden + tf.nn.embedding_lookup(self.table, [1, 3, 3, 7, 0, 1, 2, 9])
            self.loss = tf.reduce_mean(tf.square(tf.matmul(hidden, self.w2) - 0.5))
            self.step = tf.train.get_or_create_global_step()
            self.optimizer = make_optimizer()
            self.train = self.optimizer.minimize(self.loss, global_step=self.step)
            init_op = tf.global_variables_initializer()
        self.sess = tf.Session(graph=self.graph)
        self.sess.run(init_op)

    def fit(self, features: np.ndarray = FEATURES) -> None:
        self.sess.run(self.train, {self.x: features})

    def weights(self) -> list[np.ndarray]:
        with self.graph.as_default():
            return self.sess.run(tf.trainable_variables())

    def value(self, tensor):
        return self.sess.run(tensor)


def poisoned(value: float) -> np.ndarray:
    features = FEATURES.copy()
    features[2, 1] = value
    return features


def adam() -> tf.train.Optimizer:
    return tf.train.AdamOptimizer(0.05)


def scaled_model(make_manager, sparse: bool = False, is_distributed: bool = False) -> Model:
    """A Model trained by NPULossScaleOptimizer(Adam, manager); the manager is built inside the model's graph."""
    managers = []

    def make_optimizer() -> NPULossScaleOptimizer:
        managers.append(make_manager())
        return NPULossScaleOptimizer(adam(), managers[0], is_distributed=is_distributed)

    model = Model(make_optimizer, sparse)
    model.manager = managers[0]
    return model


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("manager", ["fixed", "exponential"])
def test_without_overflow_training_equals_plain_training(manager: str, sparse: bool) -> None:
    def make_manager():
        if manager == "fixed":
            return FixedLossScaleManager(1024)
        return ExponentialUpdateLossScaleManager(2**10, incr_every_n_steps=3)  # grows twice during the run

    plain = Model(adam, sparse)
    scaled = scaled_model(make_manager, sparse)
    for _ in range(8):
        plain.fit()
        scaled.fit()
    for got, want in zip(scaled.weights(), plain.weights()):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    assert scaled.value(scaled.step) == plain.value(plain.step) == 8
    assert scaled.optimizer.get_slot_names() == ["m", "v"]  # slots and hyper-parameters are the wrapped optimizer's
    assert scaled.optimizer._lr == 0.05


def test_the_loss_is_scaled_and_the_gradients_unscaled() -> None:
    """float16 backprop: 2**-26 underflows to 0 without scaling; scaled by 2**12 it survives and is unscaled in float32."""
    graph = tf.Graph()
    with graph.as_default():
        w = tf.get_variable("w", initializer=np.ones([3], np.float32))
        loss = tf.reduce_sum(tf.cast(w, tf.float16) * np.float16(2.0**-12)) * np.float16(2.0**-14)
        plain = tf.train.GradientDescentOptimizer(1.0).compute_gradients(loss)
        manager = FixedLossScaleManager(2**12)
        scaled = NPULossScaleOptimizer(tf.train.GradientDescentOptimizer(1.0), manager).compute_gradients(loss)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            plain_grad, scaled_grad, scale = sess.run([plain[0][0], scaled[0][0], manager.get_loss_scale()])
    np.testing.assert_array_equal(plain_grad, 0.0)
    np.testing.assert_array_equal(scaled_grad, 2.0**-26)
    assert scale == 2**12


@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
def test_an_overflow_skips_the_update_and_the_scale_shrinks_after_n_of_them(bad: float) -> None:
    model = scaled_model(lambda: ExponentialUpdateLossScaleManager(2**10, 1000, decr_every_n_nan_or_inf=2, decr_ratio=0.5))
    manager = model.manager
    model.fit()
    before = model.weights()
    scale_state = {v.name for v in manager.variables()}
    with model.graph.as_default():  # v1 optimizers list the variables of the default graph
        adam_state = [v for v in model.optimizer.variables() if v.name not in scale_state]
    assert len(adam_state) == 2 * 2 + 2 and len(scale_state) == 3  # m and v per weight, two beta powers
    slots_before = model.value(adam_state)
    model.fit(poisoned(bad))
    for got, want in zip(model.weights(), before):
        np.testing.assert_array_equal(got, want)  # update skipped
    for got, want in zip(model.value(adam_state), slots_before):
        np.testing.assert_array_equal(got, want)  # Adam's moments and powers untouched too
    assert model.value(model.step) == 1  # as upstream: the skipped step does not count
    assert model.value(manager.get_loss_scale()) == 2**10  # one overflow: not yet
    model.fit(poisoned(bad))
    assert model.value(manager.get_loss_scale()) == 2**9  # the second one shrinks it
    model.fit(poisoned(bad))
    assert model.value(manager.get_loss_scale()) == 2**9  # counts restart after a change
    model.fit()
    assert model.value(model.step) == 2
    assert all(np.all(np.isfinite(w)) for w in model.weights())


def test_the_scale_grows_after_n_consecutive_good_steps_and_stays_in_range() -> None:
    model = scaled_model(lambda: ExponentialUpdateLossScaleManager(4, incr_every_n_steps=3, decr_every_n_nan_or_inf=1, decr_ratio=0.5))
    scale = model.manager.get_loss_scale()
    seen = []
    for features in [FEATURES, FEATURES, FEATURES, FEATURES, FEATURES, poisoned(np.inf), FEATURES, FEATURES, FEATURES]:
        model.fit(features)
        seen.append(model.value(scale))
    # grows on the 3rd good step; the overflow halves it and restarts the good-step count
    assert seen == [4, 4, 8, 8, 8, 4, 4, 4, 8]



@pytest.mark.parametrize("init, finite", [(3.0e38, True), (1.0, False)])
def test_the_scale_never_grows_past_float32_nor_shrinks_below_one(init: float, finite: bool) -> None:
    with tf.Graph().as_default():
        manager = ExponentialUpdateLossScaleManager(init, incr_every_n_steps=1, decr_every_n_nan_or_inf=1)
        update = manager.update_loss_scale(tf.constant(finite))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(update)
            assert sess.run(manager.get_loss_scale()) == np.float32(init)


def test_fixed_manager_skips_overflows_unless_its_check_is_disabled() -> None:
    checked = scaled_model(lambda: FixedLossScaleManager(128))
    before = checked.weights()
    checked.fit(poisoned(np.inf))
    for got, want in zip(checked.weights(), before):
        np.testing.assert_array_equal(got, want)
    assert checked.value(checked.step) == 0

    unchecked = scaled_model(lambda: FixedLossScaleManager(128, enable_overflow_check=False))
    unchecked.fit(poisoned(np.inf))
    assert not np.all(np.isfinite(unchecked.weights()[0]))  # upstream applies the update blindly then
    assert unchecked.value(unchecked.step) == 1


def test_get_loss_scale_and_early_argument_errors() -> None:
    with tf.Graph().as_default():
        fixed = FixedLossScaleManager(512)
        dynamic = ExponentialUpdateLossScaleManager(2**15, 100)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert sess.run(fixed.get_loss_scale()) == 512.0
            assert sess.run(dynamic.get_loss_scale()) == 2**15
        names = {v.op.name: v for v in tf.global_variables()}
        assert set(names) == {"loss_scale", "good_steps", "bad_steps"}  # upstream's checkpoint names
        assert not tf.trainable_variables()
        with tf.control_dependencies([tf.no_op()]):  # the upstream pitfall: a manager built under control deps
            ExponentialUpdateLossScaleManager(2**15, 100)
            tf.Session().run(tf.global_variables_initializer())
    with pytest.raises(ValueError, match="loss_scale must be at least 1, got 0.5"):
        FixedLossScaleManager(0.5)
    with pytest.raises(ValueError, match="incr_every_n_steps must be >= 1, got 0"):
        ExponentialUpdateLossScaleManager(8, 0)
    with pytest.raises(ValueError, match="decr_ratio must be in \\(0, 1\\], got 2"):
        ExponentialUpdateLossScaleManager(8, 10, decr_ratio=2)
    with pytest.raises(TypeError, match="loss_scale_manager must be a FixedLossScaleManager or ExponentialUpdateLossScaleManager, got int"):
        NPULossScaleOptimizer(adam(), 1024)


def test_distributed_overflow_decision_goes_through_the_ranks_extension_point(monkeypatch) -> None:
    """With is_distributed=True the flag passes through bridge.ranks.data_parallel.overflow_across_ranks: another rank's overflow skips this rank's step."""
    calls = []
    box = {}

    def overflow_across_ranks(flag):
        calls.append(flag)
        box["other_rank"] = tf.placeholder_with_default(False, [])
        return tf.logical_or(flag, box["other_rank"])

    module = types.ModuleType(DISTRIBUTED_MODULE)
    module.overflow_across_ranks = overflow_across_ranks
    monkeypatch.setitem(sys.modules, DISTRIBUTED_MODULE, module)

    model = scaled_model(lambda: FixedLossScaleManager(64), is_distributed=True)
    assert len(calls) == 1 and calls[0].dtype == tf.bool and calls[0].shape.rank == 0
    before = model.weights()
    model.sess.run(model.train, {model.x: FEATURES, box["other_rank"]: True})
    for got, want in zip(model.weights(), before):
        np.testing.assert_array_equal(got, want)
    model.fit()
    assert model.value(model.step) == 1

    scaled_model(lambda: FixedLossScaleManager(64))  # not distributed: never consulted
    assert len(calls) == 1


def test_tf1_behaviour_script_ref_variables_v1_control_flow_and_keras_compile() -> None:
    """ModelZoo scripts run with v2 behaviour disabled (ref variables, v1 cond): same semantics there, Keras included."""
    script = textwrap.dedent(
        """
        import numpy as np
        import tensorflow.compat.v1 as tf
        tf.disable_v2_behavior()
        from npu_tf_profiling.bridge.npu_bridge.loss_scale import ExponentialUpdateLossScaleManager, NPULossScaleOptimizer
        x = tf.placeholder(tf.float32, [2])
        w = tf.Variable([1.0, 2.0])
        step = tf.train.get_or_create_global_step()
        manager = ExponentialUpdateLossScaleManager(2**8, incr_every_n_steps=2, decr_every_n_nan_or_inf=1, decr_ratio=0.5)
        train = NPULossScaleOptimizer(tf.train.MomentumOptimizer(0.1, 0.9), manager).minimize(tf.reduce_sum(w * x), global_step=step)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for feed in ([1.0, 1.0], [np.inf, 1.0], [1.0, 1.0], [1.0, 1.0]):
                sess.run(train, {x: feed})
                print(sess.run(step), sess.run(manager.get_loss_scale()), *sess.run(w).round(4))

        model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(3,))])
        keras_manager = ExponentialUpdateLossScaleManager(2**4, incr_every_n_steps=2)
        model.compile(loss="mse", optimizer=NPULossScaleOptimizer(tf.train.AdamOptimizer(0.01), keras_manager))
        model.fit(np.ones([16, 3]), np.ones([16, 1]), batch_size=4, verbose=0)  # Keras initializes the scale itself
        print(tf.keras.backend.get_session().run(keras_manager.get_loss_scale()))
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:5] == ["1 256.0 0.9 1.9", "1 128.0 0.9 1.9", "2 128.0 0.71 1.71", "3 256.0 0.439 1.439", "64.0"]


def test_eager_minimize_with_a_callable_loss_matches_plain_training() -> None:
    results = []
    for wrap in (lambda opt: opt, lambda opt: NPULossScaleOptimizer(opt, ExponentialUpdateLossScaleManager(2**12, 2))):
        w = tf.Variable([1.0, -2.0])
        optimizer = wrap(tf.train.AdamOptimizer(0.1))
        for _ in range(4):
            optimizer.minimize(lambda: tf.reduce_sum(w * w), var_list=[w])
        results.append(w.numpy())
    np.testing.assert_allclose(results[1], results[0], rtol=1e-6)


@pytest.mark.filterwarnings("ignore:`tf.layers.dense` is deprecated")
def test_profiled_loss_scaled_training_has_a_row_per_step_and_bp_on_a_gradient(tmp_path) -> None:
    """The skip and the schedule are tf.cond branches, so step-trace discovery still ends BP at the last gradient."""
    graph = tf.Graph()
    with graph.as_default():
        batch = tf.data.make_one_shot_iterator(tf.data.Dataset.from_tensor_slices(FEATURES).batch(4).repeat()).get_next()
        hidden = tf.layers.dense(batch, 6, activation=tf.tanh, name="hidden")
        loss = tf.reduce_mean(tf.square(tf.layers.dense(hidden, 1, name="out") - 0.5))
        step = tf.train.get_or_create_global_step()
        manager = ExponentialUpdateLossScaleManager(2**10, incr_every_n_steps=2)
        optimizer = NPULossScaleOptimizer(adam(), manager)
        grads_and_vars = optimizer.compute_gradients(loss)
        train = optimizer.apply_gradients(grads_and_vars, global_step=step)
        first_layer_grad = grads_and_vars[0][0].op.name  # backprop reaches the first layer last
        init = tf.global_variables_initializer()
    assert grads_and_vars[0][1].op.name == "hidden/kernel"
    config = tf.ConfigProto()
    write_request(config, True, json.dumps({"output": str(tmp_path), "training_trace": "on"}))
    with tf.Session(graph=graph, config=config) as sess:
        sess.run(init)
        for _ in range(6):
            sess.run(train)
        assert sess.run(step) == 6 and sess.run(manager.get_loss_scale()) == 2**13  # grown after steps 2, 4 and 6
    _, rows = step_trace_rows(tmp_path)
    assert len(rows) == 6
    assert_step_trace_formulas(rows)
    points = json.loads(next(only_prof_dir(tmp_path).glob("device_*/info.json")).read_text())["models"]["1"]
    assert points["fp"] == "hidden/MatMul"
    # The gradient as backprop hands it over: unscaling it (and the loss-scale bookkeeping) is the optimizer's work.
    assert points["bp"] == "gradients/hidden/MatMul_grad/MatMul_1"
    assert points["bp"] in GraphIndex.from_graph(graph).ancestors([first_layer_grad])  # the unscaled gradient is made from it
