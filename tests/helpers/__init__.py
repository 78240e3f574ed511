"""What the tests share: real models and graphs to profile, raw-data fixtures, readers of the files a run writes,
multi-worker launchers, the golden report cases, and the checks that run outside pytest's process
(a fresh interpreter without TensorFlow, msprof-analyze in its own venv, a headless browser).

Test files import them as `tests.helpers.<module>` (pytest.ini puts the repository root on the path).
"""
