from lgrep_cli.cli import main

raise SystemExit(main())
