import sys

from jobs.localstack.cli import main

sys.exit(main())
