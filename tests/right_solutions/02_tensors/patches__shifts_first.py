def patches(images, k):
    """The (N, C, H-k+1, W-k+1, k, k) view of k x k patches of images (N, C, H, W), made with as_strided."""
    # first the k x k shifted grids of patch corners, shift (a, b) outermost: grid[n, c, a, b] is the
    # (H-k+1, W-k+1) window of images[n, c] that starts at (a, b); then move the shift dims last
    n, c, h, w = images.shape
    sn, sc, sh, sw = images.stride()
    shifted = images.as_strided((n, c, k, k, h - k + 1, w - k + 1), (sn, sc, sh, sw, sh, sw),
                                images.storage_offset())
    return shifted.permute(0, 1, 4, 5, 2, 3)
