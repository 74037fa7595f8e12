"""`python -m trainers sft|grpo ...`: see `trainers.cli`."""

from trainers.cli import main

raise SystemExit(main())
