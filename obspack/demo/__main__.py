"""python -m obspack.demo: play a vLLM incident on a real Prometheus and Alertmanager."""

import sys

from obspack.demo.incident import main

sys.exit(main())
