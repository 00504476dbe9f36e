"""`python -m rag_ttc_assets.bench ...`, the same as `rag-ttc bench ...`."""

import sys

from rag_ttc_assets.bench.command import main

sys.exit(main())
