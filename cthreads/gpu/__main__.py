"""Entry point of `python -m cthreads.gpu` (see `cthreads.gpu.cli`)."""

from .cli import main

raise SystemExit(main())
