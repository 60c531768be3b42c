"""The machinery behind the tests (tests/conftest.py holds only fixtures and hooks that call it).

See README.md in this folder: what each module does and why it exists.
"""
