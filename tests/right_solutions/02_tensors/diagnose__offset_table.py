def diagnose(shape, stride):
    """What t.view(-1), t.reshape(-1), t.contiguous() and t.add_(1) do with a tensor of this layout."""
    # every element's storage offset in row-major order: view(-1) is an alias iff they step evenly,
    # contiguous iff that step is 1 (or one element); add_ raises iff a unit step along a dim of
    # size > 1 stays on the same cell (stride 0 there: all torch checks)
    import itertools

    offsets = [sum(i * s for i, s in zip(index, stride))
               for index in itertools.product(*(range(n) for n in shape))]
    gaps = {after - before for before, after in zip(offsets, offsets[1:])}
    even = len(gaps) <= 1
    dense = even and gaps <= {1}
    unit_steps, run = [], 1
    for n in reversed(shape):
        if n > 1:
            unit_steps.append(run)
        run *= n
    repeats = any(offsets[step] == offsets[0] for step in unit_steps)
    return {"view(-1)": "alias" if even else "raise", "reshape(-1)": "alias" if even else "copy",
            "contiguous()": "alias" if dense else "copy", "add_(1)": "raise" if repeats else "ok"}
