"""GAN-shaped TensorFlow 2 training steps (several tapes and optimizers in one step), for the tests.

Usage: tf2_gan.py STYLE STEPS [--forget-what-runs]

Profiling comes from the environment (PROFILING_MODE / PROFILING_OPTIONS), as an unmodified
script gets it. Prints one JSON line: {"style", "steps", "weights": sha256 of every trained
weight's bytes}, so a profiled and a plain run can be compared bit for bit.

Styles (one row per call of the step function expected):
    wgan_gp     a Keras `train_step` with two critic updates and one generator update; the critic's
                loss has a gradient penalty (a tape inside the tape), and the generator runs inside
                the critic's tape, so its forward pass makes gradients nothing uses (TensorFlow prunes them)
    dcgan       a Keras `train_step` in the style of the DCGAN examples: the generated and the real
                images concatenated into one critic batch, then a generator update
    two_tapes   a custom `tf.function` step, `next(iterator)` inside, two tapes open at once and two
                optimizers, called from a Python loop
    function_layers  two_tapes with models whose layers' `call` is a `tf.function` (as ModelZoo's SGAN
                and WGAN write them): every weight gradient is computed inside a backward function call
    no_return   two_tapes in the style of TensorFlow's DCGAN tutorial: the step returns nothing, so no
                output waits on its updates
    keras_no_return  dcgan whose `train_step` returns an empty dict (nothing useful)
    nested_no_return  no_return whose step reads the batch and calls an inner `tf.function` doing both updates
    strategy_no_return  no_return under a one-device MirroredStrategy: the step is `strategy.run(...)` of the
                replica's updates on a distributed dataset's batch, and returns nothing

--forget-what-runs injects a fault into the package: its discovery forgets which ops a function's calls
run, as it did before it knew (a GAN's iteration end was then a dead-end gradient that TensorFlow prunes),
so that the step's points never fire: the job must say so and still get rows.
--slow-tail (two_tapes styles): the step ends with a 20 ms host side effect (a stateful numpy_function that
sleeps, as a logging hook would) that nothing returned waits on.
--end-early injects a fault: discovery no longer makes the iteration end wait on what the outputs do not
(as before it did), so a step returning nothing ends at a sink running a few updates: the self-check must say so.
"""
import contextlib
import hashlib
import json
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np
import tensorflow as tf

style, steps = sys.argv[1], int(sys.argv[2])
if "--forget-what-runs" in sys.argv:
    import dataclasses

    from npu_tf_profiling.graph_points import loading

    load_tf_graph = loading._from_tf_graph
    loading._from_tf_graph = lambda graph: dataclasses.replace(load_tf_graph(graph), runs=())
if "--end-early" in sys.argv:
    from npu_tf_profiling.graph_points import iteration_end

    iteration_end._runs_not_waited_on = lambda *args: ()
LATENT, BATCH = 4, 8
tf.keras.utils.set_random_seed(11)
images = np.random.default_rng(3).normal(size=(BATCH * 8, 8, 8, 1)).astype(np.float32)
real_images = tf.data.Dataset.from_tensor_slices(images).batch(BATCH, drop_remainder=True).repeat()
layers = tf.keras.layers


def make_generator() -> tf.keras.Model:
    return tf.keras.Sequential([tf.keras.Input((LATENT,)), layers.Dense(16, activation="relu"), layers.Dense(64),
                                layers.Reshape((8, 8, 1))])


def make_critic() -> tf.keras.Model:
    return tf.keras.Sequential([tf.keras.Input((8, 8, 1)), layers.Conv2D(4, 3, strides=2, padding="same"),
                                layers.LeakyReLU(0.2), layers.Flatten(), layers.Dense(1)])


class FunctionDense(tf.Module):
    """A dense layer whose call is a `tf.function` on plain `tf.Variable`s (as ModelZoo's SGAN writes its
    layers): the step calls it, and its weights' gradients come out of a backward function call."""

    def __init__(self, n_in: int, units: int, seed: int, relu: bool) -> None:
        super().__init__()
        scale = (2.0 / (n_in + units)) ** 0.5
        self.w = tf.Variable(np.random.default_rng(seed).normal(scale=scale, size=(n_in, units)).astype(np.float32))
        self.b = tf.Variable(tf.zeros((units,)))
        self.relu = relu

    @tf.function
    def __call__(self, x: tf.Tensor) -> tf.Tensor:
        y = tf.matmul(x, self.w) + self.b
        return tf.nn.relu(y) if self.relu else y


class FunctionMLP(tf.Module):
    """Flattens its input, then FunctionDense layers; wide enough that a backward call lasts well over 20 µs."""

    def __init__(self, sizes: list[int], seed: int) -> None:
        super().__init__()
        self.dense = [FunctionDense(a, b, seed + i, relu=i < len(sizes) - 2) for i, (a, b) in enumerate(zip(sizes, sizes[1:]))]

    @tf.function
    def __call__(self, x: tf.Tensor, training: bool = True) -> tf.Tensor:
        x = tf.reshape(x, [tf.shape(x)[0], -1])
        for dense in self.dense:
            x = dense(x)
        return x


strategy = tf.distribute.MirroredStrategy(["/cpu:0"]) if style == "strategy_no_return" else None
with strategy.scope() if strategy is not None else contextlib.nullcontext():
    if style == "function_layers":
        generator, critic = FunctionMLP([LATENT, 512, 64], seed=1), FunctionMLP([64, 512, 1], seed=2)
    else:
        generator, critic = make_generator(), make_critic()
    g_opt, c_opt = tf.keras.optimizers.Adam(1e-3, beta_1=0.5), tf.keras.optimizers.Adam(1e-3, beta_1=0.5)


class WassersteinGP(tf.keras.Model):
    """The critic learns twice per generator update; its loss holds a gradient penalty."""

    def __init__(self) -> None:
        super().__init__()
        self.critic, self.generator = critic, generator

    def penalty(self, real: tf.Tensor, fake: tf.Tensor) -> tf.Tensor:
        alpha = tf.random.uniform([tf.shape(real)[0], 1, 1, 1], 0.0, 1.0)
        mixed = real + alpha * (fake - real)
        with tf.GradientTape() as inner:
            inner.watch(mixed)
            score = self.critic(mixed, training=True)
        slopes = tf.sqrt(tf.reduce_sum(tf.square(inner.gradient(score, [mixed])[0]), axis=[1, 2, 3]))
        return tf.reduce_mean((slopes - 1.0) ** 2)

    def train_step(self, real: tf.Tensor) -> dict:
        size = tf.shape(real)[0]
        for _ in range(2):
            noise = tf.random.normal((size, LATENT))
            with tf.GradientTape() as tape:
                fake = self.generator(noise, training=True)
                loss = (tf.reduce_mean(self.critic(fake, training=True)) - tf.reduce_mean(self.critic(real, training=True))
                        + 10.0 * self.penalty(real, fake))
            c_opt.apply_gradients(zip(tape.gradient(loss, self.critic.trainable_variables), self.critic.trainable_variables))
        with tf.GradientTape() as tape:
            g_loss = -tf.reduce_mean(self.critic(self.generator(tf.random.normal((size, LATENT)), training=True), training=True))
        g_opt.apply_gradients(zip(tape.gradient(g_loss, self.generator.trainable_variables), self.generator.trainable_variables))
        return {"critic_loss": loss, "generator_loss": g_loss}


class ConcatenatedGAN(tf.keras.Model):
    """A discriminator learns on generated and real images in one batch, then the generator learns to fool it."""

    def __init__(self) -> None:
        super().__init__()
        self.critic, self.generator = critic, generator
        self.bce = tf.keras.losses.BinaryCrossentropy(from_logits=True)

    def train_step(self, real: tf.Tensor) -> dict:
        size = tf.shape(real)[0]
        generated = self.generator(tf.random.normal((size, LATENT)))
        combined = tf.concat([generated, real], axis=0)
        labels = tf.concat([tf.ones((size, 1)), tf.zeros((size, 1))], axis=0)
        with tf.GradientTape() as tape:
            d_loss = self.bce(labels, self.critic(combined))
        c_opt.apply_gradients(zip(tape.gradient(d_loss, self.critic.trainable_variables), self.critic.trainable_variables))
        with tf.GradientTape() as tape:
            g_loss = self.bce(tf.zeros((size, 1)), self.critic(self.generator(tf.random.normal((size, LATENT)))))
        g_opt.apply_gradients(zip(tape.gradient(g_loss, self.generator.trainable_variables), self.generator.trainable_variables))
        return {} if style == "keras_no_return" else {"d_loss": d_loss, "g_loss": g_loss}


if style in ("wgan_gp", "dcgan", "keras_no_return"):
    gan = WassersteinGP() if style == "wgan_gp" else ConcatenatedGAN()
    gan.compile()
    gan.fit(real_images, steps_per_epoch=steps, epochs=1, verbose=0)
elif style in ("two_tapes", "function_layers", "no_return", "nested_no_return", "strategy_no_return"):
    batches = iter(real_images if strategy is None else strategy.experimental_distribute_dataset(real_images))
    if strategy is None:
        mean_bce = tf.keras.losses.BinaryCrossentropy(from_logits=True)
    else:  # a replica's Keras loss must not average by itself (the strategy's rule): the mean of one replica's batch
        per_example = tf.keras.losses.BinaryCrossentropy(from_logits=True, reduction=tf.keras.losses.Reduction.NONE)

        def mean_bce(labels: tf.Tensor, logits: tf.Tensor) -> tf.Tensor:
            return tf.reduce_mean(per_example(labels, logits))

    def updates(real: tf.Tensor) -> tf.Tensor | None:
        with tf.GradientTape() as g_tape, tf.GradientTape() as c_tape:
            fake = generator(tf.random.normal((BATCH, LATENT)), training=True)
            real_score, fake_score = critic(real, training=True), critic(fake, training=True)
            c_loss = mean_bce(tf.ones_like(real_score), real_score) + mean_bce(tf.zeros_like(fake_score), fake_score)
            g_loss = mean_bce(tf.ones_like(fake_score), fake_score)
        g_opt.apply_gradients(zip(g_tape.gradient(g_loss, generator.trainable_variables), generator.trainable_variables))
        c_opt.apply_gradients(zip(c_tape.gradient(c_loss, critic.trainable_variables), critic.trainable_variables))
        if "--slow-tail" in sys.argv:
            tf.numpy_function(lambda: np.float32(time.sleep(0.02) or 0), [], tf.float32, stateful=True)
        return c_loss if style in ("two_tapes", "function_layers") else None

    inner_updates = tf.function(updates)

    @tf.function
    def train_step() -> tf.Tensor | None:
        real = next(batches)
        if style == "nested_no_return":
            inner_updates(real)
        elif style == "strategy_no_return":
            strategy.run(updates, args=(real,))
        else:
            return updates(real)

    for _ in range(steps):
        train_step()
else:
    raise SystemExit(f"unknown style {style!r}")

sha = hashlib.sha256()
for model in (generator, critic):
    for weight in model.variables:
        sha.update(np.ascontiguousarray(weight.numpy()).tobytes())
print(json.dumps({"style": style, "steps": steps, "weights": sha.hexdigest()}))
