"""`python -m kcm`: the `kcm` command; spark-submit runs this file too (`spark-submit kcm/__main__.py explore`)."""

import sys

from kcm.cli import main

sys.exit(main())
