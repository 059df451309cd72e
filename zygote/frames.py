"""The zygotes' wire format: frames of an 8-byte little-endian length and that many bytes.

A message is a frame holding one JSON object. Reads are unbuffered (``os.read``), so no byte after a
frame is taken from the stream; with a deadline, each read first waits for the descriptor with
``select``, so a blocking socket or pipe can be read with a timeout.
"""

from __future__ import annotations

import json
import os
import select
import struct
import time
from typing import Any

HEADER = struct.Struct("<Q")
MAX_FRAME = 256 << 20

Message = dict[str, Any]


def write_all(fd: int, data: bytes) -> None:
    """All of ``data`` to a blocking file descriptor."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def read_exact(fd: int, size: int, deadline: float | None = None) -> bytes:
    """Exactly ``size`` bytes from ``fd``, or fewer at end of stream; TimeoutError past ``deadline``."""
    parts, left = [], size
    while left:
        if deadline is not None:
            wait = deadline - time.monotonic()
            if wait <= 0 or not select.select([fd], [], [], wait)[0]:
                raise TimeoutError(f"no answer within the time allowed ({size - left} of {size} bytes read)")
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            break
        parts.append(chunk)
        left -= len(chunk)
    return b"".join(parts)


def read_frame(fd: int, deadline: float | None = None, limit: int = MAX_FRAME) -> bytes | None:
    """One frame's bytes, or None at end of stream (a frame cut short counts as its end); ValueError for a frame
    over ``limit`` bytes, before any of it is read."""
    head = read_exact(fd, HEADER.size, deadline)
    if len(head) < HEADER.size:
        return None
    (size,) = HEADER.unpack(head)
    if size > limit:
        raise ValueError(f"frame of {size} bytes: the stream is corrupt")
    data = read_exact(fd, size, deadline)
    return data if len(data) == size else None


def frame(data: bytes) -> bytes:
    """``data`` as a frame (its length, then the bytes)."""
    return HEADER.pack(len(data)) + data


def write_frame(fd: int, data: bytes) -> None:
    """One frame to a blocking file descriptor."""
    write_all(fd, frame(data))


def send(fd: int, message: Message) -> None:
    """One JSON message as a frame."""
    write_frame(fd, json.dumps(message).encode())


def receive(fd: int, timeout: float | None = None) -> Message | None:
    """One JSON message, or None at end of stream; ValueError when it is not a JSON object."""
    data = read_frame(fd, None if timeout is None else time.monotonic() + timeout)
    if data is None:
        return None
    message = json.loads(data)
    if not isinstance(message, dict):
        raise ValueError(f"expected a JSON object, got {type(message).__name__}")
    return message
