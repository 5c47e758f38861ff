"""``python -m ibp_rflvm.cli``: the ``ibp-rflvm`` command without its script on the path."""

import sys

from . import main

sys.exit(main())
