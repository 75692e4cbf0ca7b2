"""``python -m chainamp``: the command-line interface (see :mod:`chainamp.cli`)."""

from .audit.cli import main

raise SystemExit(main())
