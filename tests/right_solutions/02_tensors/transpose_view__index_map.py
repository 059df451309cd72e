def transpose_view(t, dim0, dim1):
    """t.transpose(dim0, dim1) as a view made with torch.as_strided (shares t's storage)."""
    a, b = sorted((dim0 + t.dim() if dim0 < 0 else dim0, dim1 + t.dim() if dim1 < 0 else dim1))
    order = [b if i == a else a if i == b else i for i in range(t.dim())]
    return t.as_strided(size=[t.size(i) for i in order], stride=[t.stride(i) for i in order],
                        storage_offset=t.storage_offset())
