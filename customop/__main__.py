"""``python -m customop``."""

from customop.cli import main

raise SystemExit(main())
