def transpose_view(t, dim0, dim1):
    """t.transpose(dim0, dim1) as a view made with torch.as_strided (shares t's storage).

    A dimension of size 1 is never stepped along, so its stride is free: this one writes 0 there, where
    t.transpose would keep t's own. Every element, write and gradient is the same.
    """
    n = t.dim()
    dims = list(range(n))
    i, j = dim0 % n, dim1 % n
    dims[i], dims[j] = dims[j], dims[i]
    sizes = [t.size(d) for d in dims]
    strides = [0 if t.size(d) == 1 else t.stride(d) for d in dims]
    return torch.as_strided(t, sizes, strides, t.storage_offset())
