"""TF's `Example` protocol buffers (`af.train.Example`, `Features`, `Feature`, `BytesList`, `FloatList`,
`Int64List`, `FeatureList`, `FeatureLists`, `SequenceExample`) as real protobuf messages.

TensorFlow declares them in tensorflow/core/example/feature.proto and example.proto (package
`tensorflow`, proto3). Neither tensorboard nor the protobuf runtime ships them, so this module
declares the same public wire schema (message names, field names and numbers, packed repeated
numbers, the two string-keyed maps) as a `FileDescriptorProto` written in Python, and lets the
protobuf library build the classes: parsing, serialising, text format and validation are all
protobuf's own, so bytes written by TF parse here and bytes written here parse in TF.

The messages live in a private descriptor pool, so importing tensorflow (whose generated
`example_pb2` registers the same full names in protobuf's default pool) in the same process
does not clash with them.

protobuf is an optional dependency (the `tensorboard` extra): without it, `import asyncflow` still
works and each message class raises ImportError, saying what to install, when it is used.
"""

from __future__ import annotations

from typing import Any

try:
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
except ImportError:  # pragma: no cover - depends on the environment
    descriptor_pb2 = None

_F: Any = descriptor_pb2.FieldDescriptorProto if descriptor_pb2 is not None else None

_PACKAGE = "tensorflow"


def _field(msg: descriptor_pb2.DescriptorProto, name: str, number: int, ftype: int, *,
           repeated: bool = False, type_name: str | None = None, oneof: int | None = None) -> None:
    f = msg.field.add(name=name, number=number, type=ftype,
                      label=_F.LABEL_REPEATED if repeated else _F.LABEL_OPTIONAL)
    if type_name is not None:
        f.type_name = type_name
    if oneof is not None:
        f.oneof_index = oneof
    f.json_name = name.split("_")[0] + "".join(p.title() for p in name.split("_")[1:])


def _map_field(msg: descriptor_pb2.DescriptorProto, name: str, number: int, value_type: str) -> None:
    """A `map<string, value_type> name = number;` field: a repeated nested `<Name>Entry` message."""
    entry_name = "".join(p.title() for p in name.split("_")) + "Entry"
    entry = msg.nested_type.add(name=entry_name)
    entry.options.map_entry = True
    _field(entry, "key", 1, _F.TYPE_STRING)
    _field(entry, "value", 2, _F.TYPE_MESSAGE, type_name=value_type)
    _field(msg, name, number, _F.TYPE_MESSAGE, repeated=True, type_name=f".{_PACKAGE}.{msg.name}.{entry_name}")


def _feature_file() -> descriptor_pb2.FileDescriptorProto:
    """tensorflow/core/example/feature.proto, field for field."""
    fd = descriptor_pb2.FileDescriptorProto(name="tensorflow/core/example/feature.proto", package=_PACKAGE,
                                            syntax="proto3")
    for name, ftype in (("BytesList", _F.TYPE_BYTES), ("FloatList", _F.TYPE_FLOAT), ("Int64List", _F.TYPE_INT64)):
        msg = fd.message_type.add(name=name)
        _field(msg, "value", 1, ftype, repeated=True)
        if ftype != _F.TYPE_BYTES:
            msg.field[0].options.packed = True  # as TF declares it (proto3 packs them anyway)
    feature = fd.message_type.add(name="Feature")
    feature.oneof_decl.add(name="kind")
    for number, (name, typ) in enumerate((("bytes_list", "BytesList"), ("float_list", "FloatList"),
                                          ("int64_list", "Int64List")), start=1):
        _field(feature, name, number, _F.TYPE_MESSAGE, type_name=f".{_PACKAGE}.{typ}", oneof=0)
    _map_field(fd.message_type.add(name="Features"), "feature", 1, f".{_PACKAGE}.Feature")
    feature_list = fd.message_type.add(name="FeatureList")
    _field(feature_list, "feature", 1, _F.TYPE_MESSAGE, repeated=True, type_name=f".{_PACKAGE}.Feature")
    _map_field(fd.message_type.add(name="FeatureLists"), "feature_list", 1, f".{_PACKAGE}.FeatureList")
    fd.options.cc_enable_arenas = True
    fd.options.java_package = "org.tensorflow.example"
    return fd


def _example_file() -> descriptor_pb2.FileDescriptorProto:
    """tensorflow/core/example/example.proto, field for field."""
    fd = descriptor_pb2.FileDescriptorProto(name="tensorflow/core/example/example.proto", package=_PACKAGE,
                                            syntax="proto3", dependency=["tensorflow/core/example/feature.proto"])
    example = fd.message_type.add(name="Example")
    _field(example, "features", 1, _F.TYPE_MESSAGE, type_name=f".{_PACKAGE}.Features")
    sequence = fd.message_type.add(name="SequenceExample")
    _field(sequence, "context", 1, _F.TYPE_MESSAGE, type_name=f".{_PACKAGE}.Features")
    _field(sequence, "feature_lists", 2, _F.TYPE_MESSAGE, type_name=f".{_PACKAGE}.FeatureLists")
    fd.options.cc_enable_arenas = True
    fd.options.java_package = "org.tensorflow.example"
    return fd


def _unavailable(name: str) -> type:
    def fail(*args: Any, **kwargs: Any) -> Any:
        raise ImportError(f"af.train.{name} needs the protobuf package: pip install 'protobuf>=5.29.5' "
                          f"(or asyncflow[tensorboard])")

    return type(name, (), {"__init__": fail, "FromString": staticmethod(fail)})


if descriptor_pb2 is not None:
    POOL = descriptor_pool.DescriptorPool()
    POOL.Add(_feature_file())
    POOL.Add(_example_file())


def _message(name: str) -> type:
    if descriptor_pb2 is None:  # pragma: no cover - depends on the environment
        return _unavailable(name)
    return message_factory.GetMessageClass(POOL.FindMessageTypeByName(f"{_PACKAGE}.{name}"))


BytesList = _message("BytesList")
FloatList = _message("FloatList")
Int64List = _message("Int64List")
Feature = _message("Feature")
Features = _message("Features")
FeatureList = _message("FeatureList")
FeatureLists = _message("FeatureLists")
Example = _message("Example")
SequenceExample = _message("SequenceExample")

__all__ = ["BytesList", "Example", "Feature", "FeatureList", "FeatureLists", "Features", "FloatList", "Int64List",
           "SequenceExample"]
