"""``python -m hawkwatch`` is the ``hawkwatch`` command."""

from hawkwatch.cli import console_main

console_main()
