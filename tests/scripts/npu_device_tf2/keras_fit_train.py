# A Keras fit script written in ModelZoo TF2 style, for the tests: npu_device options, open().as_default(),
# the vendored Keras 2.6 dropout conversion, the distributed optimizer wrapper, then model.fit.
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf

import npu_device
import npu_convert_dropout  # noqa: F401
from common import dataset, model, npu_config, parse_args, report

args = parse_args()
npu_config(args)
tf.keras.utils.set_random_seed(7)
net = model()
optimizer = npu_device.distribute.npu_distributed_keras_optimizer_wrapper(tf.keras.optimizers.SGD(0.01))
net.compile(optimizer=optimizer, loss="mse")
npu_device.distribute.broadcast(net.trainable_variables, root_rank=0)
history = net.fit(dataset(args.batch_size), epochs=2, steps_per_epoch=args.steps // 2, verbose=0)
report(net, history.history["loss"][-1])
