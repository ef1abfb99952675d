"""Parity with the authors' code (issue 59): exporters that run upstream code outside the project and save fixtures
of numbers (export_*.py), the list of every method of the zoo (methods.yaml) and the fidelity page (render.py)."""
