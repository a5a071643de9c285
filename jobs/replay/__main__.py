import sys

from jobs.replay.cli import main

sys.exit(main())
