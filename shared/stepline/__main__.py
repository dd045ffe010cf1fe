"""`python -m stepline`: the `stepline` command."""

import sys

from .cli import main

sys.exit(main())
