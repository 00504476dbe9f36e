"""`python -m rag_ttc_assets.cli ...`, the same as `rag-ttc ...`."""

import sys

from rag_ttc_assets.cli import main

sys.exit(main())
