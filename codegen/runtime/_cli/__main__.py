"""``python -m workers_ai._cli``: the ``workers-ai`` command."""

import sys

from .main import main

sys.exit(main())
