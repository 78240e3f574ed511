"""A TensorFlow 2 step profiled by the package while TensorFlow's own profiler traces the same iterations.

Usage: tf2_accuracy.py OUTPUT WARMUP ITERATIONS [mlp|gan|gan_no_return]

The step (a custom `tf.function` with `next()` inside, an MLP, Adam; or `gan`: a generator
on noise and a critic on the batch and the generator's output, two tapes, two Adams; `gan_no_return`:
the same GAN step returning nothing, as TensorFlow's DCGAN tutorial writes it) is profiled
with `start_tf2_profiling` into OUTPUT. After WARMUP calls, `tf.profiler.experimental`
traces ITERATIONS calls twice, in two windows one after the other: at host tracer
level 2, and at level 3. Level 2 holds only the kernels TensorFlow's cost model counts as
expensive (measured: 14 to 61 of the step's 379 kernels a call, varying from call to call,
and in some calls 4 of the 10 gradient ops), so the last gradient or the last op of a
call is often not in it and that call's BP or iteration end reads early. Level 3 holds
every kernel, each with its own trace event, which lengthens every interval made of
kernels: FP Start's (the first layer's weight reads run between the stamp and the
layer). So the test reads FP Start against level 2 and BP End and the iteration end
against level 3, and the script gives both windows. Each is read back here (with
the package's XPlane reader), and the script prints one JSON line: per window, for
each traced call, in call order, TensorFlow's times in µs since the epoch of the
step's fp op start, the end of the last bp gradient op, and the end of the last
model op the iteration end waits on, with how many events of those ops the call has;
and the window's first run number. The test compares them with the package's rows.

The trace's times are relative to the profiler's start; the epoch offset comes
from eager `tf.timestamp()` calls made inside the trace between the steps: each
returns the epoch time read inside its own kernel's run, which the trace holds
(each run bounds the offset: the value minus the run's end, up to the value minus its
start; the offset is the middle of what every run allows, good to half that range,
printed as `anchor_error_us`. Where the bounds disagree, by clock drift, it is the
median over the calls of the value minus the run's midpoint, good to half a run).
Grappler's remapping is off (as the Ascend scripts run it) so the ops the points
name are not fused away.
"""
import glob
import json
import os
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf

import npu_tf_profiling
from npu_tf_profiling.reports.task.xspace import host_trace

output, warmup, iterations = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
kind = sys.argv[4] if len(sys.argv) > 4 else "mlp"
LEVELS = (2, 3)  # host tracer levels, one window each (the module docstring says why both)
npu_tf_profiling.start_tf2_profiling({"output": output, "training_trace": "on"})
tf.config.optimizer.set_experimental_options({"remapping": False})
tf.keras.utils.set_random_seed(3)
layers = [tf.keras.Input((32,))] + [tf.keras.layers.Dense(64, activation="relu") for _ in range(4)] + [tf.keras.layers.Dense(1)]
model = tf.keras.Sequential(layers)
optimizer = tf.keras.optimizers.Adam(1e-3)
optimizer.build(model.trainable_variables)
data = tf.data.Dataset.from_tensor_slices((tf.random.normal((1024, 32)), tf.random.normal((1024, 1)))).batch(64).repeat()
iterator = iter(data)


@tf.function
def mlp_step() -> tf.Tensor:
    x, y = next(iterator)
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((model(x, training=True) - y) ** 2)
    optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
    return loss


generator = tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(64, activation="relu"), tf.keras.layers.Dense(32)])
critic = tf.keras.Sequential([tf.keras.Input((32,)), tf.keras.layers.Dense(64, activation="relu"), tf.keras.layers.Dense(1)])
g_optimizer, c_optimizer = tf.keras.optimizers.Adam(1e-3), tf.keras.optimizers.Adam(1e-3)
if kind.startswith("gan"):
    g_optimizer.build(generator.trainable_variables)
    c_optimizer.build(critic.trainable_variables)


@tf.function
def gan_step() -> tf.Tensor:
    x, _ = next(iterator)
    with tf.GradientTape() as g_tape, tf.GradientTape() as c_tape:
        fake = generator(tf.random.normal((64, 8)), training=True)
        real_score, fake_score = critic(x, training=True), critic(fake, training=True)
        c_loss = tf.reduce_mean(fake_score) - tf.reduce_mean(real_score)
        g_loss = -tf.reduce_mean(fake_score)
    c_optimizer.apply_gradients(zip(c_tape.gradient(c_loss, critic.trainable_variables), critic.trainable_variables))
    g_optimizer.apply_gradients(zip(g_tape.gradient(g_loss, generator.trainable_variables), generator.trainable_variables))
    return c_loss


@tf.function
def gan_no_return_step() -> None:
    """The GAN step as TensorFlow's DCGAN tutorial writes it: returns nothing (Iteration End waits on every update)."""
    gan_step.python_function()


train_step = {"gan": gan_step, "gan_no_return": gan_no_return_step}.get(kind, mlp_step)


def call_step() -> None:
    """One call, waited for: its output read, or (a step returning nothing) the call itself."""
    result = train_step()
    if result is not None:
        result.numpy()


def traced_window(level: int) -> tuple[list[float], str]:
    """ITERATIONS calls traced at host tracer `level`: the eager anchors taken between them, and the trace's folder."""
    logdir = os.path.join(output, f"tf_profiler_level_{level}")
    anchors = []
    tf.profiler.experimental.start(logdir, options=tf.profiler.experimental.ProfilerOptions(host_tracer_level=level))
    for _ in range(iterations):
        anchors.append(float(tf.timestamp().numpy()) * 1e6)
        call_step()
    anchors.append(float(tf.timestamp().numpy()) * 1e6)
    tf.profiler.experimental.stop()
    return anchors, logdir


for _ in range(warmup):
    call_step()
windows = {level: traced_window(level) for level in LEVELS}

# ---- the points the package chose, and the model ops the iteration end waits on
for _ in range(50):  # the model is registered when the ring reader first reads its rows (every 0.5 s)
    info = json.loads(open(glob.glob(os.path.join(output, "PROF_*", "device_*", "info.json"))[0]).read())
    if info["models"]:
        break
    time.sleep(0.1)
(points,) = info["models"].values()
graph = train_step.get_concrete_function().graph
own = "npu_tf_profiling"
# A step returning nothing: its end waits on every update too (info.json's iteration_end_also)
waited, stack = set(), [graph.get_operation_by_name(name) for name in [points["iteration_end"], *points.get("iteration_end_also", [])]]
while stack:
    op = stack.pop()
    for parent in [t.op for t in op.inputs] + list(op.control_inputs):
        if parent.name not in waited and own not in parent.name:
            waited.add(parent.name)
            stack.append(parent)
# Not the batch's read: IteratorGetNext is asynchronous, and its level-3 event may end after the op has given
# its batch (seen: 3 calls in 100 whose event ended 167-713 µs after the row's end, which comes after the
# batch's consumers). Its end is the GetNext column's, not compared here.
waited -= {op.name for op in graph.get_operations() if op.type.startswith("IteratorGetNext")}
bp_ops = {t.split(":")[0] for t in points["bp_inputs"]}


def epoch_offset(anchors: list[float], eager: list[tuple[float, float]]) -> tuple[float, float]:
    """(µs to add to the trace's times to put them on the epoch, the error bound): see the module docstring."""
    lowest = max(value - end for value, (_, end) in zip(anchors, eager))
    highest = min(value - start for value, (start, _) in zip(anchors, eager))
    if lowest <= highest:
        return (lowest + highest) / 2, (highest - lowest) / 2
    offset = statistics.median(value - (start + end) / 2 for value, (start, end) in zip(anchors, eager))
    return offset, statistics.median((end - start) / 2 for start, end in eager)


def window_truth(anchors: list[float], logdir: str) -> dict:
    """TensorFlow's times of the window's calls, read as the task reports read a trace (the package's XPlane reader)."""
    (path,) = glob.glob(os.path.join(logdir, "plugins", "profile", "*", "*.xplane.pb"))
    with open(path, "rb") as handle:
        trace = host_trace(handle.read())
    events = [(k.start_us, k.end_us, k.name) for k in trace.kernels]
    eager = trace.stamps
    assert len(eager) == len(anchors), (len(eager), len(anchors))
    offset, anchor_error = epoch_offset(anchors, eager)
    calls = []
    for (begin, _), (finish, _) in zip(eager, eager[1:]):
        inside = [e for e in events if begin < e[0] < finish]
        fp = [e[0] for e in inside if e[2] == points["fp"]]
        bp = [e[1] for e in inside if e[2] in bp_ops]
        end = [e[1] for e in inside if e[2] in waited]
        # None where the trace has no event of the op (level 2 leaves out the kernels TensorFlow's cost model finds cheap)
        calls.append({
            "fp_start": min(fp) + offset if fp else None,
            "bp_end": max(bp) + offset if bp else None,
            "iteration_end": max(end) + offset if end else None,
            "bp_events": len(bp),
            "end_events": len(end),  # a call missing some (TF 2.21 at level 3, now and then) reads the end early
        })
    return {"calls": calls, "anchor_error_us": anchor_error}


first_run = warmup + 1
truth = {}
for level, (anchors, logdir) in windows.items():
    truth[str(level)] = {"first_run": first_run, **window_truth(anchors, logdir)}
    first_run += iterations
print(json.dumps({"tensorflow": tf.__version__, "windows": truth}))
