"""`af.python_io`, as `tf.compat.v1.python_io`: writing and reading TFRecord files from Python.

    with af.python_io.TFRecordWriter("train.tfrecord", options="GZIP") as writer:
        writer.write(af.train.Example(features=...).SerializeToString())
    for record in af.python_io.tf_record_iterator("train.tfrecord", options="GZIP"):
        ...

The format (framing, masked CRC-32C, ZLIB/GZIP) lives in asyncflow/ops/record_ops_tfrecord.py;
the same names are bound in `af.io`.
"""

from asyncflow.ops.record_ops_tfrecord import (
    TFRecordCompressionType,
    TFRecordOptions,
    TFRecordWriter,
    tf_record_iterator,
)

__all__ = ["TFRecordCompressionType", "TFRecordOptions", "TFRecordWriter", "tf_record_iterator"]
