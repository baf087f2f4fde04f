import sys

from .paths import private_pycache

private_pycache()   # before the CLI's imports: where bytecode may not be written, the doctor's is kept in its cache

from .cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
