"""Every registered op type has at least one numpy-reference row in the op tables."""

import importlib
import pkgutil

import asyncflow  # noqa: F401 - registers the ops
import tests.ops as ops_tests
from asyncflow.ops.registry import OPS

# Op types exercised by dedicated tests elsewhere rather than by a table row.
TESTED_ELSEWHERE = {
    "Placeholder": "fed in every session test; the unfed error in tests/core/test_session.py",
    "VariableV2": "tests/core/test_variables.py",
    "IsVariableInitialized": "tests/core/test_variables.py",
    "Assign": "tests/core/test_variables.py",
    "AssignAdd": "tests/core/test_variables.py",
    "AssignSub": "tests/core/test_variables.py",
    "ScatterAdd": "tests/core/test_variables.py",
    "ScatterSub": "tests/core/test_variables.py",
    "ScatterUpdate": "tests/core/test_variables.py",
    "ScatterMul": "tests/core/test_more_names.py",
    "ScatterDiv": "tests/core/test_more_names.py",
    "ScatterMax": "tests/core/test_more_names.py",
    "ScatterMin": "tests/core/test_more_names.py",
    "ScatterNdUpdate": "tests/core/test_more_names.py",
    "ScatterNdAdd": "tests/core/test_more_names.py",
    "ScatterNdSub": "tests/core/test_more_names.py",
    "NoOp": "tests/core/test_session.py (group, control dependencies)",
    "_Send": "tests/exec/test_partition.py (partitioned runs over a rendezvous), tests/integration",
    "_Recv": "tests/exec/test_partition.py (partitioned runs over a rendezvous), tests/integration",
    "ParseExampleV2": "tests/dataset/test_records_parse.py (values, shapes and errors pinned with TF 2.21)",
    "IteratorV2": "tests/dataset/test_iterators.py (af.data iterators)",
    "MakeIterator": "tests/dataset/test_iterators.py",
    "MakeIteratorInProcess": "tests/dataset/test_datasets.py (from_generator, py_func maps)",
    "OneShotIterator": "tests/dataset/test_datasets.py",
    "OneShotIteratorInProcess": "tests/dataset/test_datasets.py",
    "IteratorGetNext": "tests/dataset/test_datasets.py, tests/dataset/test_iterators.py",
    "IteratorToStringHandle": "tests/dataset/test_iterators.py (string handles)",
    "IteratorFromStringHandleV2": "tests/dataset/test_iterators.py (string handles)",
    "TFRecordReaderV2": "tests/dataset/test_records.py (keys and corruption through a filename queue)",
}


def _all_cases():
    cases = []
    for info in pkgutil.iter_modules(ops_tests.__path__):
        if info.name.startswith("test_") and info.name != "test_coverage":
            module = importlib.import_module(f"tests.ops.{info.name}")
            cases.extend(getattr(module, "CASES", []))
    return cases


def test_every_op_type_has_a_reference_row():
    covered = {t for case in _all_cases() for t in case.op_types}
    registered = {t for t in OPS if not t.startswith("_Test")}  # tests/testing_ops.py
    missing = sorted(registered - covered - set(TESTED_ELSEWHERE))
    assert not missing, f"op types with no numpy-reference row: {missing}"


def test_case_ids_are_unique():
    ids = [c.id for c in _all_cases()]
    assert len(ids) == len(set(ids)), sorted({i for i in ids if ids.count(i) > 1})
