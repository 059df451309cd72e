def overlaps(a, b):
    """Wrong: 'same storage means overlap'."""
    return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()
