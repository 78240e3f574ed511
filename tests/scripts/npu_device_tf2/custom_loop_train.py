# A custom-loop script written in ModelZoo TF2 style, for the tests: a tf.function step with loss scaling,
# all_reduce of the gradients and npu_device.ops.gelu when present.
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf

import npu_device as npu
import npu_convert_dropout  # noqa: F401
from common import dataset, model, npu_config, parse_args, report

args = parse_args()
npu_config(args)
tf.keras.utils.set_random_seed(7 + (int(os.environ.get("RANK_ID", "0")) if args.seed_by_rank else 0))
net = model()
activation = npu.ops.gelu if hasattr(npu.ops, "gelu") else tf.nn.gelu
optimizer = npu.train.optimizer.NpuLossScaleOptimizer(tf.keras.optimizers.SGD(0.01), dynamic=True)
iterator = iter(dataset(args.batch_size))
npu.distribute.broadcast(net.trainable_variables, root_rank=0)


@tf.function
def train_step(iterator):
    x, y = next(iterator)
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((activation(net(x, training=True)) - y) ** 2)
        scaled = optimizer.get_scaled_loss(loss)
    grads = optimizer.get_unscaled_gradients(tape.gradient(scaled, net.trainable_variables))
    grads = npu.distribute.all_reduce(grads, "mean")
    optimizer.apply_gradients(zip(grads, net.trainable_variables))
    return loss


for step in range(args.steps):
    loss = train_step(iterator)
print("last_step_finite", bool(optimizer.last_step_finite.numpy()))
report(net, loss)
