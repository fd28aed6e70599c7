"""`af.data`, as `tf.compat.v1.data`: datasets and iterators on the asyncio runtime (issue 11).

The graph side is dataset.py (sources, `SourceDataset`), dataset_transforms.py and iterator.py;
structure.py holds nested element structures and specs; functions.py traces dataset functions
into function graphs; runtime*.py run pipelines (see runtime.py's docstring for the design).
"""

from asyncflow.data import experimental
from asyncflow.data.dataset import Dataset, DatasetV1, DatasetV2, Options, SourceDataset
from asyncflow.data.iterator import (
    Iterator,
    get_output_classes,
    get_output_shapes,
    get_output_types,
    make_initializable_iterator,
    make_one_shot_iterator,
)
from asyncflow.data.readers import ArrowDataset, FixedLengthRecordDataset, TextLineDataset, TFRecordDataset
from asyncflow.data.runtime import AUTOTUNE
from asyncflow.data.structure import DatasetSpec, TensorSpec

__all__: list[str] = [
    "AUTOTUNE", "ArrowDataset", "Dataset", "DatasetSpec", "DatasetV1", "DatasetV2", "FixedLengthRecordDataset",
    "Iterator", "Options", "SourceDataset", "TFRecordDataset", "TensorSpec", "TextLineDataset", "experimental",
    "get_output_classes", "get_output_shapes", "get_output_types", "make_initializable_iterator",
    "make_one_shot_iterator",
]
