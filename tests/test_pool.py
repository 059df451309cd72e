"""Runner processes start without re-running ``__main__`` (the ``labs`` script), which is restored after."""

from __future__ import annotations

import sys

from labs.run.pool import _main_module_hidden


def test_main_module_hidden_then_restored():
    main = sys.modules["__main__"]
    before = (main.__dict__.get("__file__"), main.__spec__)
    with _main_module_hidden():
        assert getattr(main, "__file__", None) is None and main.__spec__ is None
    assert (main.__dict__.get("__file__"), main.__spec__) == before
