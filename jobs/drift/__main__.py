import sys

from jobs.drift.cli import main

sys.exit(main())
