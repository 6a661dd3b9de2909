"""The EqLM programme's own model files: their config, checkpoint format, forward pass, solvers and BLiMP protocol.

`config` imports no torch (a caller can size a file before anything is allocated); the other modules do.
"""
