# SPDX-License-Identifier: GPL-2.0
"""The few bpf(2) commands bpftool 7.1 lacks, through libbpf (ctypes).

bpftool 7.1 and tc do not know TCX (Linux >= 6.6), and bpftool has no
command that keeps BPF run-time statistics on; libbpf (libbpf.so.1, >= 1.0,
as scripts/install-deps.sh installs it) has all three, so nothing here
hand-packs a bpf_attr or calls bpf(2) by its syscall number.

Errors: OSError(errno, "libbpf NAME(...)") from the libbpf call that failed.
The TCX calls act in the caller's network namespace: the tests' rig runs
them in the device's with nfsl.netns.in_netns.
"""
import ctypes
import os

BPF_STATS_RUN_TIME = 0      # enum bpf_stats_type
BPF_TCX_EGRESS = 47         # enum bpf_attach_type (<linux/bpf.h>, 6.6)
MAX_PROGS = 64

_lib = None


def lib():
    """The loaded libbpf.so.1 (ctypes.CDLL), with the prototypes used."""
    global _lib
    if _lib is None:
        u32p = ctypes.POINTER(ctypes.c_uint32)
        _lib = ctypes.CDLL("libbpf.so.1", use_errno=True)
        _lib.bpf_enable_stats.argtypes = [ctypes.c_int]
        _lib.bpf_prog_query.argtypes = [ctypes.c_int, ctypes.c_int,
                                        ctypes.c_uint32, u32p, u32p, u32p]
        _lib.bpf_prog_get_fd_by_id.argtypes = [ctypes.c_uint32]
        _lib.bpf_prog_detach2.argtypes = [ctypes.c_int, ctypes.c_int,
                                          ctypes.c_int]
    return _lib


def _check(ret, what):
    """RET of libbpf call WHAT, or OSError for a negative one (-errno)."""
    if ret < 0:
        err = -ret if ret < -1 else ctypes.get_errno()
        raise OSError(err, f"libbpf {what}: {os.strerror(err)}")
    return ret


def enable_stats():
    """bpf_enable_stats(BPF_STATS_RUN_TIME): an fd that keeps the
    programs' run_time_ns / run_cnt counting while it is open (close it to
    stop). Raises OSError (EPERM without CAP_SYS_ADMIN)."""
    return _check(lib().bpf_enable_stats(BPF_STATS_RUN_TIME),
                  "bpf_enable_stats(BPF_STATS_RUN_TIME)")


def tcx_egress(ifindex):
    """Ids of the TCX egress programs of interface IFINDEX (in the caller's
    network namespace), in their order, at most MAX_PROGS."""
    ids = (ctypes.c_uint32 * MAX_PROGS)()
    cnt = ctypes.c_uint32(MAX_PROGS)
    _check(lib().bpf_prog_query(ifindex, BPF_TCX_EGRESS, 0, None, ids,
                                ctypes.byref(cnt)),
           f"bpf_prog_query(ifindex {ifindex}, BPF_TCX_EGRESS)")
    return list(ids[:cnt.value])


def tcx_detach(ifindex, prog_id):
    """Detach TCX egress program PROG_ID from interface IFINDEX."""
    fd = _check(lib().bpf_prog_get_fd_by_id(prog_id),
                f"bpf_prog_get_fd_by_id({prog_id})")
    try:
        _check(lib().bpf_prog_detach2(fd, ifindex, BPF_TCX_EGRESS),
               f"bpf_prog_detach2(prog {prog_id}, ifindex {ifindex}, "
               "BPF_TCX_EGRESS)")
    finally:
        os.close(fd)

