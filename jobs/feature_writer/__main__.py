import sys

from jobs.feature_writer.cli import main

sys.exit(main())
