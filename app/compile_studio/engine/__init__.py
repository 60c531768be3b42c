"""The benchmark engine: model, timed loop and environment probe (torch, no Qt)."""
