import sys

from jobs.features.cli import main

sys.exit(main())
