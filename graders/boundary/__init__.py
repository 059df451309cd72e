"""The only crossing between a sandbox and the grader: the protocol's frames and the wire format of what
comes back, parsed and checked here; the grader reads typed values, never raw frames."""
