"""What every command in scripts/ shares: an expected failure ends with one line and exit status 2, no traceback."""

import functools
import sys


# OSError: a missing path or file, an output directory in use, a Hub HTTP error (HfHubHTTPError is an OSError);
# ValueError: a bad value or a malformed file (UnicodeDecodeError included). Anything else is a bug: traceback.
EXPECTED_ERRORS = (OSError, ValueError)


def command(main):
    """Wrap a command's `main(argv=None)`: expected errors print `error: <message>` on stderr and exit with 2."""

    @functools.wraps(main)
    def wrapper(argv=None):
        try:
            return main(argv)
        except EXPECTED_ERRORS as error:
            print(f"error: {error}", file=sys.stderr)
            raise SystemExit(2) from None

    return wrapper
