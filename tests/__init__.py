"""irexec's test suite. A package so that tests and tools import the shared helpers as
`tests.support` (run from the repository root)."""
