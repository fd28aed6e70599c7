"""Session targets: `http://host:port`, and TF's `grpc://host:port` as TF1 programs write it."""

import pytest

from asyncflow.net.client import parse_target


@pytest.mark.parametrize("target, address", [("http://127.0.0.1:2222", "127.0.0.1:2222"),
                                             ("grpc://localhost:2222/", "localhost:2222"),
                                             ("http://[::1]:80", "[::1]:80")])
def test_targets_give_host_and_port(target, address):
    assert parse_target(target) == address


@pytest.mark.parametrize("target, message", [("https://h:1", "speak HTTP"), ("h:1", "speak HTTP"),
                                             ("http://h", "is not 'http://host:port'"),
                                             ("grpc://:80", "is not 'http://host:port'")])
def test_bad_targets_are_refused_clearly(target, message):
    with pytest.raises(ValueError, match=message):
        parse_target(target)
