"""Test-suite settings shared by every test file."""

from hypothesis import HealthCheck, settings

# CI runs on 2 shared cores: no per-example deadline, a fixed seed so every run checks the same
# examples (reproducible), and no example database written into the work tree.
settings.register_profile(
    "course", deadline=None, derandomize=True, database=None, max_examples=100,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("course")
