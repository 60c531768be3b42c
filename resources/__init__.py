"""Icons, presets and the stylesheet of Compile Studio, shipped as package data.

Installed as ``compile_studio.resources``; use :mod:`compile_studio.resources_path`
to find the files.
"""
