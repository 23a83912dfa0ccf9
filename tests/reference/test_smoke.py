"""Importability of the public reference names."""

import sessionstate.reference as ref


def test_public_names_importable() -> None:
    for name in ref.__all__:
        assert getattr(ref, name) is not None, name
