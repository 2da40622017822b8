"""``python -m nbgraph``: the ``nbgraph`` command (:mod:`nbgraph.cli`)."""

import sys

from .cli import main

sys.exit(main())
