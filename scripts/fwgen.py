#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""scripts/fwgen.py: the command line of nfsl.fwgen (its docstring has the usage)."""
import sys

from nfsl.fwgen import main

if __name__ == "__main__":
    sys.exit(main())
