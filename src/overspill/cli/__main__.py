"""``python -m overspill.cli``: the command line."""

from . import exit_with, main

exit_with(main())
