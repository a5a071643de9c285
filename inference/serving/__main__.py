import sys

from inference.serving.cli import main

sys.exit(main())
