"""labs.run.skips: what a run did not execute, from what ran; CUDA branches that would skip silently."""

import nbformat

from labs.run import skips


def test_declared_skips_are_read_back_with_source_cell_indices():
    nb = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell("DEVICE = 'cpu'", metadata={"tags": ["injected-parameters"]})
    skipping = nbformat.v4.new_code_cell("if cuda_only(DEVICE, 'streams'): ...")
    skipping.outputs = [
        nbformat.v4.new_output(
            "stream",
            name="stdout",
            text=("before\nSKIPPED on cpu: streams needs a CUDA device (run with DEVICE='cuda' on a GPU).\n"),
        )
    ]
    nb.cells = [
        nbformat.v4.new_code_cell("DEVICE = 'auto'"),
        params,
        nbformat.v4.new_markdown_cell("text"),
        skipping,
    ]
    assert skips.declared(nb) == [
        skips.Skip(2, "streams needs a CUDA device (run with DEVICE='cuda' on a GPU).")
    ]


def test_cuda_branches_that_leave_the_cpu_nothing_are_flagged():
    flagged = [
        'if DEVICE == "cuda":\n    x = x.cuda()\n    print(x.sum())',
        "if torch.cuda.is_available():\n    a = 1\n    b = 2",
        "if t.is_cuda and ok:\n    a = 1\n    b = 2",
        "%%torchrun --nproc 2\nif device.type == 'cuda':\n    a = 1\n    b = 2",
    ]
    for source in flagged:
        assert skips.undeclared_branches(source), source
    fine = [
        'if DEVICE == "cuda":\n    torch.cuda.synchronize()',  # a sync: CPU needs nothing
        'if cuda_only(DEVICE, "streams"):\n    a = 1\n    b = 2',  # declared
        'if DEVICE == "cuda":\n    a = 1\n    b = 2\nelse:\n    a = 0',  # both paths run code
        'def f():\n    if DEVICE == "cuda":\n        a = 1\n        return a\n    return 0',  # early return
        "if not torch.cuda.is_available():\n    a = 1\n    b = 2",  # the CPU's own branch
        'device = "cuda" if torch.cuda.is_available() else "cpu"',
    ]
    for source in fine:
        assert not skips.undeclared_branches(source), source
