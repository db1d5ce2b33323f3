"""python -m obspack.demo: play the vLLM incidents on a real Prometheus and Alertmanager."""

import sys

from obspack.demo.narrate import main

sys.exit(main())
