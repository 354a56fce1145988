"""``python -m safetile``: the same as the ``safetile`` command."""
import sys

from .cli import main

sys.exit(main())
