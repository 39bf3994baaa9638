"""Identifiers people type into commands are letters and digits only."""

from patchbay.core.security.secrets import random_identifier


def test_identifiers_never_need_quoting_nor_read_as_an_option():
    drawn = {random_identifier() for _ in range(2000)}
    assert len(drawn) == 2000
    assert all(len(value) == 24 and value.isascii() and value.isalnum() for value in drawn)
