"""What a course notebook imports: device/seed setup, visualizers, notebook helpers.

Visualizers live in their own modules and are imported explicitly
(``from labutils import graphs, strides, memory``) so a lesson pays only for what it uses.
``%load_ext labutils`` registers the ``%%torchrun`` cell magic.
"""

from labutils.notebook import cuda_only, resolve_device, seed_everything, setup

__all__ = ["cuda_only", "load_ipython_extension", "resolve_device", "seed_everything", "setup"]


def load_ipython_extension(ipython) -> None:
    """Register the course's IPython magics (``%%torchrun``)."""
    from labutils.launch.magic import register_magics

    register_magics(ipython)
