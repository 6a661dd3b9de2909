"""The EqLM library: model, fixed-point solvers, training, checkpoints, corpus, export, scoring and the ONNX runtime.

Nothing in this package imports Django: the `inference` app reads settings and rows and calls into it.
Modules that import torch (model, objective, trainer, checkpoint, export, blimp, testing) are never imported by the web
process; the onnxruntime runtime (`eqlm.decoder`, `eqlm.generation`, `eqlm.scoring`) and the tokenizer need only
numpy and onnxruntime.
"""
