"""graders.wire: tensors of any layout a probe can return survive the trip out of the sandbox."""

import torch

from graders import wire
from graders.probing import to_plain


def test_odd_strides_round_trip():
    base = torch.arange(72.0).reshape(3, 24)
    odd = [base[:1, 0], base[:, :1][:1], base.t()[1:], base[:0], torch.tensor(5.0), base[::2, ::5]]
    back = wire.decode(wire.encode(to_plain(odd)))
    for got, want in zip(back, odd, strict=True):
        assert torch.equal(got, want) and got.is_contiguous()
