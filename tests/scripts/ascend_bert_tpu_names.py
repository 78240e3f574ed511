# coding=utf-8
# A BERT-style Estimator script as ModelZoo-TensorFlow's BERT family is written: the TPU names read
# with use_tpu off (InputPipelineConfig.PER_HOST_V2, tf.contrib.tpu.RunConfig / TPUConfig), a model_fn
# returning tf.contrib.tpu.TPUEstimatorSpec, and tf.contrib.tpu.TPUEstimator(use_tpu=False) training
# on CPU/GPU from an input_fn that reads params["batch_size"]. Tiny dense "encoder" on synthetic ids.
from npu_bridge.npu_init import *
import numpy as np
import tensorflow as tf

flags = tf.flags
FLAGS = flags.FLAGS
flags.DEFINE_string("output_dir", None, "model directory")
flags.DEFINE_bool("use_tpu", False, "Whether to use TPU or GPU/CPU.")
flags.DEFINE_integer("num_train_steps", 20, "Number of training steps.")
flags.DEFINE_integer("train_batch_size", 8, "Total batch size for training.")
flags.DEFINE_integer("iterations_per_loop", 1000, "How many steps to make in each estimator call.")


def model_fn_builder(learning_rate):
    def model_fn(features, labels, mode, params):
        embeddings = tf.get_variable("word_embeddings", [50, 16])
        hidden = tf.reduce_mean(tf.nn.embedding_lookup(embeddings, features["input_ids"]), axis=1)
        logits = tf.layers.dense(hidden, 2, name="cls")
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=features["label_ids"], logits=logits))
        optimizer = tf.train.AdamOptimizer(learning_rate)
        train_op = optimizer.minimize(loss, global_step=tf.train.get_global_step())
        return tf.contrib.tpu.TPUEstimatorSpec(mode=mode, loss=loss, train_op=train_op, scaffold_fn=None)
    return model_fn


def input_fn_builder(seq_length):
    def input_fn(params):
        rng = np.random.RandomState(0)
        ids = rng.randint(0, 50, size=(64, seq_length)).astype(np.int32)
        labels = rng.randint(0, 2, size=64).astype(np.int32)
        dataset = tf.data.Dataset.from_tensor_slices({"input_ids": ids, "label_ids": labels}).repeat()
        return dataset.batch(params["batch_size"], drop_remainder=True)
    return input_fn


def main(_):
    is_per_host = tf.contrib.tpu.InputPipelineConfig.PER_HOST_V2
    run_config = tf.contrib.tpu.RunConfig(
        cluster=None, model_dir=FLAGS.output_dir, save_checkpoints_steps=1000,
        tpu_config=tf.contrib.tpu.TPUConfig(iterations_per_loop=FLAGS.iterations_per_loop,
                                            per_host_input_for_training=is_per_host))
    estimator = tf.contrib.tpu.TPUEstimator(use_tpu=FLAGS.use_tpu, model_fn=model_fn_builder(1e-3),
                                            config=run_config, train_batch_size=FLAGS.train_batch_size)
    estimator.train(input_fn=input_fn_builder(6), max_steps=FLAGS.num_train_steps)
    print("global_step: %d" % estimator.get_variable_value("global_step"))


if __name__ == "__main__":
    flags.mark_flag_as_required("output_dir")
    tf.app.run()
