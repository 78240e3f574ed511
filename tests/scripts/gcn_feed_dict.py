# coding=utf-8
# The shape of ModelZoo's GCN (Kipf & Welling's train.py) on synthetic data: the whole graph is fed with
# feed_dict every epoch (sparse features and normalised adjacency as (coords, values, shape) tuples, made once),
# and each epoch evaluates twice with its own sess.run (validation, then test). No input pipeline.
from npu_bridge.npu_init import *
import argparse
import time

import numpy as np
import tensorflow as tf


def sparse_to_tuple(dense):
    coords = np.stack(np.nonzero(dense), axis=1).astype(np.int64)
    return coords, dense[dense != 0].astype(np.float32), np.array(dense.shape, dtype=np.int64)


def preprocess_features(features):
    rowsum = features.sum(1, keepdims=True)
    return sparse_to_tuple(features / np.maximum(rowsum, 1.0))


def preprocess_adj(adj):
    adj = adj + np.eye(adj.shape[0])
    d_inv_sqrt = 1.0 / np.sqrt(adj.sum(1))
    return sparse_to_tuple(adj * d_inv_sqrt[:, None] * d_inv_sqrt[None, :])


def construct_feed_dict(features, support, labels, labels_mask, placeholders):
    feed_dict = dict()
    feed_dict.update({placeholders['labels']: labels})
    feed_dict.update({placeholders['labels_mask']: labels_mask})
    feed_dict.update({placeholders['features']: features})
    feed_dict.update({placeholders['support'][i]: support[i] for i in range(len(support))})
    feed_dict.update({placeholders['num_features_nonzero']: features[1].shape})
    return feed_dict


def graph_convolution(x, support, in_dim, out_dim, name, sparse_inputs, act):
    with tf.variable_scope(name):
        weights = tf.get_variable("weights", [in_dim, out_dim], initializer=tf.glorot_uniform_initializer(seed=0))
        pre = tf.sparse_tensor_dense_matmul(x, weights) if sparse_inputs else tf.matmul(x, weights)
        return act(tf.sparse_tensor_dense_matmul(support, pre))


def masked_softmax_cross_entropy(preds, labels, mask):
    loss = tf.nn.softmax_cross_entropy_with_logits_v2(logits=preds, labels=tf.stop_gradient(labels))
    mask = tf.cast(mask, tf.float32)
    return tf.reduce_mean(loss * mask / tf.reduce_mean(mask))


def masked_accuracy(preds, labels, mask):
    correct = tf.cast(tf.equal(tf.argmax(preds, 1), tf.argmax(labels, 1)), tf.float32)
    mask = tf.cast(mask, tf.float32)
    return tf.reduce_mean(correct * mask / tf.reduce_mean(mask))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=12)
    parser.add_argument("--nodes", type=int, default=1500)
    parser.add_argument("--dropout", type=float, default=0.5)
    flags = parser.parse_args()
    rng = np.random.RandomState(0)
    n, f, c = flags.nodes, 300, 7
    adj = (rng.rand(n, n) < 0.004).astype(np.float64)
    adj = np.maximum(adj, adj.T)
    features = preprocess_features((rng.rand(n, f) < 0.02).astype(np.float64))
    support = [preprocess_adj(adj)]
    labels = np.eye(c)[rng.randint(0, c, n)]
    train_mask, val_mask, test_mask = (np.arange(n) < 140), (np.arange(n) >= 200) & (np.arange(n) < 700), np.arange(n) >= 700
    y_train, y_val, y_test = labels * train_mask[:, None], labels * val_mask[:, None], labels * test_mask[:, None]

    placeholders = {
        'support': [tf.sparse_placeholder(tf.float32)],
        'features': tf.sparse_placeholder(tf.float32, shape=tf.constant(features[2], dtype=tf.int64)),
        'labels': tf.placeholder(tf.float32, shape=(None, c)),
        'labels_mask': tf.placeholder(tf.int32),
        'dropout': tf.placeholder_with_default(0., shape=()),
        'num_features_nonzero': tf.placeholder(tf.int32),
    }
    hidden = graph_convolution(placeholders['features'], placeholders['support'][0], f, 16, "gc1", True, tf.nn.relu)
    hidden = tf.nn.dropout(hidden, rate=placeholders['dropout'])
    outputs = graph_convolution(hidden, placeholders['support'][0], 16, c, "gc2", False, lambda x: x)
    loss = masked_softmax_cross_entropy(outputs, placeholders['labels'], placeholders['labels_mask'])
    accuracy = masked_accuracy(outputs, placeholders['labels'], placeholders['labels_mask'])
    opt_op = tf.train.AdamOptimizer(learning_rate=0.01).minimize(loss)

    def evaluate(feats, supp, lab, mask):
        t_test = time.time()
        feed_dict_val = construct_feed_dict(feats, supp, lab, mask, placeholders)
        outs_val = sess.run([loss, accuracy], feed_dict=feed_dict_val)
        return outs_val[0], outs_val[1], (time.time() - t_test)

    sess = tf.Session(config=npu_config_proto())
    sess.run(tf.global_variables_initializer())
    for epoch in range(flags.epochs):
        t = time.time()
        feed_dict = construct_feed_dict(features, support, y_train, train_mask, placeholders)
        feed_dict.update({placeholders['dropout']: flags.dropout})
        outs = sess.run([opt_op, loss, accuracy], feed_dict=feed_dict)
        cost, acc, duration = evaluate(features, support, y_val, val_mask)
        test_cost, test_acc, test_duration = evaluate(features, support, y_test, test_mask)
        print("Epoch:", '%04d' % (epoch + 1), "train_loss=", "{:.5f}".format(outs[1]), "val_loss=", "{:.5f}".format(cost),
              "test_acc=", "{:.5f}".format(test_acc), "time=", "{:.5f}".format(time.time() - t))
    print("Optimization Finished!")
    sess.close()


if __name__ == "__main__":
    main()
