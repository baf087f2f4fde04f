"""GPU doctor: diagnoses broken ROCm / CUDA + PyTorch stacks.

Layers (each imports only the ones below it):
  facts (catalogue), model  ->  runner, parsers, probes, kb  ->  matcher  ->  service  ->  cli, pages
Keep this package import-light: probe children import it.
"""
__version__ = "0.1.0"
