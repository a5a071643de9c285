import sys

from jobs.demo.cli import main

sys.exit(main())
