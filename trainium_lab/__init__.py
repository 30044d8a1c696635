"""Trainium Lab: models and sourced data for a course on AWS Trainium.

Submodules are imported on demand (``from trainium_lab import specs``) so that
``import trainium_lab`` stays cheap.
"""

__version__ = "0.1.0"
