"""``python -m sessionstate``: the same as the ``sessionstate`` command."""

import sys

from .cli import main

sys.exit(main())
