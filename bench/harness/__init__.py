"""The benchmark harness driven by bench/run: one module per section."""
