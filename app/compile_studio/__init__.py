"""Compile Studio: does torch.compile make this model faster on this machine?"""

__version__ = "0.1.0"
