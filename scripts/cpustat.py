#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""scripts/cpustat.py: the command line of nfsl.cpustat (its docstring has the usage)."""
import sys

from nfsl.cpustat import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
