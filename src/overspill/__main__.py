"""``python -m overspill``: the command line."""

from .cli import exit_with, main

exit_with(main())
