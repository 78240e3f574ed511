"""Protobuf message classes declared in code, so the reports decode TensorFlow's files without TensorFlow.

Two of TensorFlow's messages reach the reports: ``StepStats`` (a Session's
FULL_TRACE run) and ``XSpace`` (``tf.profiler``'s trace of TensorFlow 2
steps). Importing TensorFlow to read them would make offline analysis slow
and tie it to one TensorFlow version, so each is redeclared from the field
numbers of its ``.proto`` file with the ``protobuf`` package alone. Only the
fields the reports read are declared: protobuf skips unknown fields when it
parses, so real payloads decode as-is.

Each file lives in a private descriptor pool under its own package name, so
the classes never clash with TensorFlow's when both are loaded in one process
(tests, benchmarks).
"""
from __future__ import annotations

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

F = descriptor_pb2.FieldDescriptorProto


def add_field(message: descriptor_pb2.DescriptorProto, name: str, number: int, ftype: int,
              label: int = F.LABEL_OPTIONAL, type_name: str = "") -> None:
    """Declare one field of `message` (`type_name` is the fully qualified name of a message field's type)."""
    field = message.field.add()
    field.name = name
    field.number = number
    field.type = ftype
    field.label = label
    if type_name:
        field.type_name = type_name


def add_map(message: descriptor_pb2.DescriptorProto, scope: str, name: str, number: int, key_type: int,
            value_type: int, value_type_name: str = "") -> None:
    """Declare ``map<key, value> name = number;`` in `message` (whose full name is `scope`): protobuf's
    repeated entry message with map_entry set."""
    entry_name = "".join(part.capitalize() for part in name.split("_")) + "Entry"
    entry = message.nested_type.add(name=entry_name)
    entry.options.map_entry = True
    add_field(entry, "key", 1, key_type)
    add_field(entry, "value", 2, value_type, type_name=value_type_name)
    add_field(message, name, number, F.TYPE_MESSAGE, F.LABEL_REPEATED, f".{scope}.{entry_name}")


def message_classes(fdp: descriptor_pb2.FileDescriptorProto, *names: str) -> tuple[type, ...]:
    """The classes of `names` (top-level messages of `fdp`), from a pool of their own."""
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)

    def cls(name: str) -> type:
        desc = pool.FindMessageTypeByName(f"{fdp.package}.{name}")
        get = getattr(message_factory, "GetMessageClass", None)
        if get is not None:  # protobuf >= 4.21
            return get(desc)
        return message_factory.MessageFactory(pool).GetPrototype(desc)  # pragma: no cover - old protobuf

    return tuple(cls(name) for name in names)
