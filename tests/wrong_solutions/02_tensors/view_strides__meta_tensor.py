def view_strides(shape, stride, new_shape):
    t = torch.empty_strided(shape, stride, device="meta")
    try:
        return tuple(t.view(new_shape).stride())
    except RuntimeError:
        return None
