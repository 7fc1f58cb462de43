"""`python -m harness` runs the `jepka` command line."""

from harness.cli import main

raise SystemExit(main())
