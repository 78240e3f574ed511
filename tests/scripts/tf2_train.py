"""TensorFlow 2 training in each style the TF2 step trace covers, for the tests.

Usage: tf2_train.py STYLE STEPS [--api OUTPUT]

Profiling comes from the environment (PROFILING_MODE / PROFILING_OPTIONS), as an
unmodified script gets it, or with --api from `npu_tf_profiling.start_tf2_profiling`.
Prints one JSON line: {"style", "steps", "weights": sha256 of every trained weight's
bytes, "loss": the last loss}, so a profiled and a plain run can be compared bit for bit.

Styles (each optimizer step is one iteration; evaluation never is):
    loop          a tf.function step with next(iterator) inside, a Python loop around it
    loop_outer    the same loop inside one tf.function (tf.range), calling the step function
    fit           Keras model.fit, steps_per_execution 1, with validation and evaluate/predict after
    fit_spe       model.fit with steps_per_execution 3
    gan           two train functions (discriminator, generator) per loop iteration: two Model IDs
    retrace       a step traced twice (two batch sizes): one model, its rows numbered in step order
    for_dataset   `for x, y in dataset:` a step given the batch, then a second step given none (a GAN's
                  generator), and every 4 steps a tf.function evaluation over 2 validation batches: the
                  eager reads are the first step's GetNext only
    jit           model.fit with jit_compile=True (timed around the compiled step: FP/BP N/A, a note says why)
    mirrored      MirroredStrategy over two logical CPUs, a custom step (Reduce columns)
    multi_worker  MultiWorkerMirroredStrategy (TF_CONFIG from the environment), a custom step reading its
                  distributed dataset in the function; run one process per worker
    multi_worker_fit  the same strategy with Keras model.fit
"""
import hashlib
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np
import tensorflow as tf

style, steps = sys.argv[1], int(sys.argv[2])
if "--api" in sys.argv:
    import npu_tf_profiling

    npu_tf_profiling.start_tf2_profiling({"output": sys.argv[sys.argv.index("--api") + 1], "training_trace": "on"})

if style == "mirrored":
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
tf.keras.utils.set_random_seed(7)
rng = np.random.default_rng(0)
features = rng.normal(size=(512, 8)).astype(np.float32)
labels = (features @ rng.normal(size=(8, 1))).astype(np.float32)


def dataset(batch: int = 16) -> tf.data.Dataset:
    return tf.data.Dataset.from_tensor_slices((features, labels)).batch(batch, drop_remainder=True).repeat()


def mlp() -> tf.keras.Model:
    return tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(16, activation="relu"), tf.keras.layers.Dense(1)])


def digest(*models: tf.keras.Model) -> str:
    sha = hashlib.sha256()
    for model in models:
        for weight in model.weights:
            sha.update(np.ascontiguousarray(weight.numpy()).tobytes())
    return sha.hexdigest()


def custom_step(model: tf.keras.Model, optimizer: tf.keras.optimizers.Optimizer, x: tf.Tensor, y: tf.Tensor) -> tf.Tensor:
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((model(x, training=True) - y) ** 2)
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


models: list = []
loss = None
if style in ("loop", "loop_outer", "retrace"):
    model, optimizer = mlp(), tf.keras.optimizers.Adam(0.01)
    models = [model]
    iterator = iter(dataset())

    @tf.function
    def train_step() -> tf.Tensor:
        x, y = next(iterator)
        return custom_step(model, optimizer, x, y)

    if style == "loop":
        for _ in range(steps):
            loss = train_step()
    elif style == "loop_outer":
        @tf.function
        def train_steps(n: tf.Tensor) -> tf.Tensor:
            last = tf.constant(0.0)
            for _ in tf.range(n):
                last = train_step()
            return last

        loss = train_steps(tf.constant(steps))
    else:
        small = iter(dataset(8))

        @tf.function(reduce_retracing=False)
        def step_on(x: tf.Tensor, y: tf.Tensor) -> tf.Tensor:
            return custom_step(model, optimizer, x, y)

        for i in range(steps):
            x, y = next(iterator) if i % 2 == 0 else next(small)
            loss = step_on(x, y)
elif style == "for_dataset":
    model, optimizer = mlp(), tf.keras.optimizers.Adam(0.01)
    head, head_optimizer = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(1)]), tf.keras.optimizers.SGD(0.01)
    models = [model, head]

    @tf.function
    def batch_step(x: tf.Tensor, y: tf.Tensor) -> tf.Tensor:
        return custom_step(model, optimizer, x, y)

    @tf.function
    def head_step() -> tf.Tensor:
        return custom_step(head, head_optimizer, tf.ones((4, 4)), tf.zeros((4, 1)))

    @tf.function
    def evaluate(x: tf.Tensor, y: tf.Tensor) -> tf.Tensor:
        return tf.reduce_mean((model(x, training=False) - y) ** 2)

    for i, (x, y) in enumerate(dataset().take(steps)):
        loss = batch_step(x, y)
        head_step()
        if i % 4 == 3:
            for vx, vy in dataset().take(2):
                evaluate(vx, vy)
elif style in ("fit", "fit_spe", "jit"):
    model = mlp()
    models = [model]
    model.compile(optimizer=tf.keras.optimizers.SGD(0.01), loss="mse", steps_per_execution=3 if style == "fit_spe" else 1,
                  jit_compile=style == "jit")
    history = model.fit(dataset(), steps_per_epoch=steps // 2, epochs=2, verbose=0, validation_data=dataset(), validation_steps=2)
    model.evaluate(dataset(), steps=3, verbose=0)
    model.predict(features[:32], verbose=0)
    loss = history.history["loss"][-1]
elif style == "gan":
    generator = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(8, activation="relu"), tf.keras.layers.Dense(8)])
    discriminator = tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(8, activation="relu"), tf.keras.layers.Dense(1)])
    models = [generator, discriminator]
    g_opt, d_opt = tf.keras.optimizers.Adam(1e-3), tf.keras.optimizers.Adam(1e-3)
    real = iter(tf.data.Dataset.from_tensor_slices(features).batch(16, drop_remainder=True).repeat())
    bce = tf.keras.losses.BinaryCrossentropy(from_logits=True)

    @tf.function
    def discriminator_step() -> tf.Tensor:
        batch = next(real)
        fake = generator(tf.random.stateless_normal((16, 4), seed=(1, 2)))
        with tf.GradientTape() as tape:
            d_loss = bce(tf.ones((16, 1)), discriminator(batch)) + bce(tf.zeros((16, 1)), discriminator(fake))
        d_opt.apply_gradients(zip(tape.gradient(d_loss, discriminator.trainable_variables), discriminator.trainable_variables))
        return d_loss

    @tf.function
    def generator_step() -> tf.Tensor:
        with tf.GradientTape() as tape:
            g_loss = bce(tf.ones((16, 1)), discriminator(generator(tf.random.stateless_normal((16, 4), seed=(3, 4)))))
        g_opt.apply_gradients(zip(tape.gradient(g_loss, generator.trainable_variables), generator.trainable_variables))
        return g_loss

    for _ in range(steps):
        discriminator_step()
        loss = generator_step()
elif style in ("mirrored", "multi_worker"):
    strategy = (tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"]) if style == "mirrored"
                else tf.distribute.MultiWorkerMirroredStrategy())
    with strategy.scope():
        model, optimizer = mlp(), tf.keras.optimizers.SGD(0.01)
    models = [model]
    iterator = iter(strategy.experimental_distribute_dataset(dataset(32)))

    @tf.function
    def mirrored_step() -> tf.Tensor:
        def replica_step(x: tf.Tensor, y: tf.Tensor) -> tf.Tensor:
            with tf.GradientTape() as tape:
                per_example = tf.reduce_sum((model(x, training=True) - y) ** 2, axis=1)
                replica_loss = tf.nn.compute_average_loss(per_example, global_batch_size=32)
            optimizer.apply_gradients(zip(tape.gradient(replica_loss, model.trainable_variables), model.trainable_variables))
            return replica_loss

        per_replica = strategy.run(replica_step, args=next(iterator))
        return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)

    for _ in range(steps):
        loss = mirrored_step()
elif style == "multi_worker_fit":
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    with strategy.scope():
        model = mlp()
        model.compile(optimizer=tf.keras.optimizers.SGD(0.01), loss="mse")
    models = [model]
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
    history = model.fit(dataset(32).with_options(options), steps_per_epoch=steps, epochs=1, verbose=0)
    loss = history.history["loss"][-1]
else:
    raise SystemExit(f"unknown style {style!r}")

print(json.dumps({"style": style, "steps": steps, "weights": digest(*models), "loss": float(loss)}), flush=True)
