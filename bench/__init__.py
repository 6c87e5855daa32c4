"""urlguard's benchmarks: ``python -m bench`` (bench/run.py) and
``python -m bench.ab`` (bench/ab.py). docs/speed.md says what they measure.
"""
