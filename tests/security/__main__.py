from tests.security.cli import main

raise SystemExit(main())
