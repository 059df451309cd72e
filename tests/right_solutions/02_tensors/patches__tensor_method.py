def patches(images, k):
    """The (N, C, H-k+1, W-k+1, k, k) view of k x k patches of images (N, C, H, W), made with as_strided."""
    *lead, h, w = images.shape
    strides = images.stride()
    return images.as_strided(size=(*lead, h - k + 1, w - k + 1, k, k), stride=(*strides, *strides[-2:]),
                             storage_offset=images.storage_offset())
