"""The desktop window (PySide6 + pyqtgraph); never imports torch."""
