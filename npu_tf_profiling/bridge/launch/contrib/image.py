"""`tf.contrib.image`'s projective warps (`transform`, `rotate`, `translate`) on TensorFlow 2's stock kernel.

These three make up most contrib.image uses in ModelZoo (data augmentation).
TensorFlow 1.15 ran them on `ImageProjectiveTransformV2` with zeros outside the
image, which TensorFlow 2 still has (tensorflow_addons.image wraps the same
kernel); the helpers building the 8-number transforms are contrib's formulas.
A transform [a0, a1, a2, b0, b1, b2, c0, c1] maps an *output* point (x, y) to
the input point ((a0 x + a1 y + a2) / k, (b0 x + b1 y + b2) / k), k = c0 x + c1 y + 1.
"""
from __future__ import annotations

from typing import Any

import tensorflow as tf


def _batched(images: Any) -> tuple[tf.Tensor, int]:
    images = tf.convert_to_tensor(images, name="images")
    rank = images.shape.rank
    if rank not in (2, 3, 4):
        raise ValueError(f"tf.contrib.image: images must have rank 2 (HW), 3 (HWC) or 4 (NHWC), got rank {rank}")
    return {2: images[None, :, :, None], 3: images[None], 4: images}[rank], rank


def transform(images: Any, transforms: Any, interpolation: str = "NEAREST", output_shape: Any = None,
              name: str | None = None) -> tf.Tensor:
    """Warp `images` by `transforms` ([8] for all, or [N, 8]); points outside the input become 0."""
    with tf.name_scope(name or "transform"):
        batched, rank = _batched(images)
        transforms = tf.convert_to_tensor(transforms, tf.float32, name="transforms")
        transforms = transforms[None] if transforms.shape.rank == 1 else transforms
        shape = tf.shape(batched)[1:3] if output_shape is None else tf.convert_to_tensor(output_shape, tf.int32)
        output = tf.raw_ops.ImageProjectiveTransformV2(images=batched, transforms=transforms, output_shape=shape,
                                                       interpolation=interpolation.upper(), fill_mode="CONSTANT")
        if rank == 4:
            return output
        return output[0, :, :, 0] if rank == 2 else output[0]


def angles_to_projective_transforms(angles: Any, image_height: Any, image_width: Any, name: str | None = None) -> tf.Tensor:
    """The transforms rotating images of that size counterclockwise by `angles` (radians) about their centre."""
    with tf.name_scope(name or "angles_to_projective_transforms"):
        angles = tf.convert_to_tensor(angles, tf.float32)
        angles = angles[None] if angles.shape.rank == 0 else angles
        height, width = tf.cast(image_height, tf.float32) - 1, tf.cast(image_width, tf.float32) - 1
        cos, sin = tf.cos(angles), tf.sin(angles)
        x_offset = (width - (cos * width - sin * height)) / 2.0
        y_offset = (height - (sin * width + cos * height)) / 2.0
        zeros = tf.zeros_like(angles)
        return tf.stack([cos, -sin, x_offset, sin, cos, y_offset, zeros, zeros], axis=1)


def translations_to_projective_transforms(translations: Any, name: str | None = None) -> tf.Tensor:
    """The transforms shifting images by `translations` ([dx, dy] or [N, 2], pixels; +dx moves right)."""
    with tf.name_scope(name or "translations_to_projective_transforms"):
        translations = tf.convert_to_tensor(translations, tf.float32)
        translations = translations[None] if translations.shape.rank == 1 else translations
        ones, zeros = tf.ones_like(translations[:, 0]), tf.zeros_like(translations[:, 0])
        return tf.stack([ones, zeros, -translations[:, 0], zeros, ones, -translations[:, 1], zeros, zeros], axis=1)


def rotate(images: Any, angles: Any, interpolation: str = "NEAREST", name: str | None = None) -> tf.Tensor:
    """Rotate `images` counterclockwise by `angles` (radians; one, or one per image)."""
    with tf.name_scope(name or "rotate"):
        batched, _ = _batched(images)
        size = tf.cast(tf.shape(batched)[1:3], tf.float32)
        return transform(images, angles_to_projective_transforms(angles, size[0], size[1]), interpolation)


def translate(images: Any, translations: Any, interpolation: str = "NEAREST", name: str | None = None) -> tf.Tensor:
    """Shift `images` by `translations` ([dx, dy] pixels, or one pair per image)."""
    with tf.name_scope(name or "translate"):
        return transform(images, translations_to_projective_transforms(translations), interpolation)


def flat_transforms_to_matrices(transforms: Any) -> tf.Tensor:
    transforms = tf.reshape(tf.convert_to_tensor(transforms, tf.float32), [-1, 8])
    return tf.reshape(tf.concat([transforms, tf.ones([tf.shape(transforms)[0], 1])], 1), [-1, 3, 3])


def matrices_to_flat_transforms(matrices: Any) -> tf.Tensor:
    matrices = tf.convert_to_tensor(matrices, tf.float32)
    return tf.reshape(matrices / matrices[:, 2:3, 2:3], [-1, 9])[:, :8]


def compose_transforms(*transforms: Any) -> tf.Tensor:
    """One transform that, passed to `transform`, applies each of `transforms` in turn (contrib's composition)."""
    composed = flat_transforms_to_matrices(transforms[0])
    for other in transforms[1:]:
        composed = tf.matmul(composed, flat_transforms_to_matrices(other))
    return matrices_to_flat_transforms(composed)
