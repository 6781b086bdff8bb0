"""Runs a pytest file for CTest; exits 77 (skipped) when pytest or pandas is missing, as docs/CONTRACT.md asks of
tests whose prerequisites are absent."""
import sys

try:
    import pandas  # noqa: F401
    import pytest
except ImportError as e:
    print(f"skipped: {e} (apt-get install python3-pandas python3-pytest)")
    sys.exit(77)
sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", *sys.argv[1:]]))
