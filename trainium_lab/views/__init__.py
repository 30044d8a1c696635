"""Explanations and documents built from model results: prose and layout live here, not in the
models (STYLE.md, "Models return numbers")."""
