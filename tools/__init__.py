"""Benchmarks and generators for irexec. Run each as a module from the repository root, e.g.
`python3 -m tools.bench_models --help`, so that `irexec` and `tests.support` import as packages."""
