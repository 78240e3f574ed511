# Written for the tests in the style of the npu_ops.py that ModelZoo TF2 folders vendor (not their code):
# dropout through the generated NPU ops, with the gradient registration those files carry.
import numbers

from tensorflow.python.eager import context
from tensorflow.python.framework import ops
from tensorflow.python.ops import array_ops

from npu_device import gen_npu_ops

DEFAULT_GRAPH_SEED = 87654321


def get_seed(op_seed):
    graph_seed = ops.get_default_graph().seed
    if graph_seed is not None:
        return graph_seed % (2 ** 31 - 1), (op_seed if op_seed is not None else ops.get_default_graph()._last_id) % (2 ** 31 - 1)
    if op_seed is not None:
        return DEFAULT_GRAPH_SEED, op_seed
    return None, None


def dropout(x, keep_prob, noise_shape=None, seed=None, name=None):
    if context.executing_eagerly():
        raise RuntimeError("npu_ops.dropout() is not compatible with eager execution")
    x = ops.convert_to_tensor(x, name="x")
    if isinstance(keep_prob, numbers.Real) and not 0 < keep_prob <= 1:
        raise ValueError("keep_prob must be in (0, 1], got %g" % keep_prob)
    if isinstance(keep_prob, float) and keep_prob == 1:
        return x
    seed, seed2 = get_seed(seed)
    shape = array_ops.shape(x) if noise_shape is None else noise_shape
    mask = gen_npu_ops.drop_out_gen_mask(shape, keep_prob, seed, seed2, name)
    return gen_npu_ops.drop_out_do_mask(x, mask, keep_prob, name)


@ops.RegisterGradient("DropOutDoMask")
def _drop_out_do_mask_grad(op, grad):
    return [gen_npu_ops.drop_out_do_mask(grad, op.inputs[1], op.inputs[2]), None, None]
