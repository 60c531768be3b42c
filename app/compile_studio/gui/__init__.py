"""The desktop GUI (PySide6 + pyqtgraph).

Nothing in this package imports torch: the environment and every benchmark
come from a worker process (see :mod:`compile_studio.launchers.supervisor`).
"""
