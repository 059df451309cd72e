# Wrong: as_strided on the corner slice images[..., :H-k+1, :W-k+1]. The values are right and the result
# is a view of images, but autograd's as_strided backward covers only the slice's elements: the
# gradient of every pixel outside the corner is lost.
def patches(images, k):
    """The (N, C, H-k+1, W-k+1, k, k) view of k x k patches of images (N, C, H, W), made with as_strided."""
    *lead, h, w = images.shape
    corner = images[..., : h - k + 1, : w - k + 1]
    strides = images.stride()
    return corner.as_strided(size=(*lead, h - k + 1, w - k + 1, k, k), stride=(*strides, *strides[-2:]),
                             storage_offset=corner.storage_offset())
