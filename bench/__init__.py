"""Benchmarks: each module ``bench/bench_<topic>.py`` defines ``main(quick: bool) -> list[dict]``.

Speed is reported as ratios measured side by side in one run (these machines are noisy), never
asserted in the tests. Run all with ``make bench`` or one with ``python -m bench <topic>``.
"""
