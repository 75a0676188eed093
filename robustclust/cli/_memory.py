"""How much memory a kernel fit needs, and how much there is.

The exact kernel estimators hold the N x N kernel matrix and work arrays of
the same size.  Peak memory measured on this version (``ru_maxrss`` over N =
3,000 to 6,000 rows): about 3 N x N float64 matrices for kernel robust
K-means and 5 for the kernel mixture.  :func:`kernel_bytes` uses these
factors; the command line switches to the Nystroem approximation when that
would take more than :data:`KERNEL_MEMORY_SHARE` of :func:`available_memory`.
"""

import os
from pathlib import Path

#: N x N float64 matrices alive at the peak of an exact kernel fit.
KERNEL_MATRICES = {"kmeans": 3, "gmm": 5}
#: Share of the available memory an exact kernel fit may take.
KERNEL_MEMORY_SHARE = 0.5


def kernel_bytes(n_rows, method):
    """Peak bytes of an exact kernel fit of ``n_rows`` rows (``method``: kmeans, soft, gmm)."""
    matrices = KERNEL_MATRICES["gmm" if method == "gmm" else "kmeans"]
    return matrices * 8 * int(n_rows) ** 2


def _read_number(path):
    try:
        text = Path(path).read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _meminfo_available():
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _cgroup_available():
    """Memory left under this process's cgroup limit (v2, then v1), or None."""
    for limit, usage in (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
                         ("/sys/fs/cgroup/memory/memory.limit_in_bytes",
                          "/sys/fs/cgroup/memory/memory.usage_in_bytes")):
        cap = _read_number(limit)  # "max" (no limit) reads as None
        if cap is not None and cap < 1 << 60:
            used = _read_number(usage) or 0
            return max(cap - used, 0)
    return None


def address_space_left():
    """Bytes of address space left under this process's ``ulimit -v`` (RLIMIT_AS),
    or None when there is no such limit: the limit minus the process's virtual
    size (VmSize of /proc/self/status)."""
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    except (ImportError, ValueError, OSError, AttributeError):
        return None
    if soft in (resource.RLIM_INFINITY, -1) or soft <= 0:
        return None
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmSize:"):
                return max(soft - int(line.split()[1]) * 1024, 0)
    except (OSError, ValueError, IndexError):
        return None
    return None


def available_memory():
    """Bytes of memory this process can still take, or None when unknown.

    The smallest of the system's available memory (``MemAvailable`` of
    /proc/meminfo, else the physical memory), what the cgroup limit
    (containers) leaves and what ``ulimit -v`` leaves of the address space.
    """
    candidates = [_meminfo_available(), _cgroup_available(), address_space_left()]
    if candidates[0] is None:
        try:
            candidates[0] = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):
            pass
    known = [c for c in candidates if c is not None]
    return min(known) if known else None


#: Bytes per row of a fit, per feature and per cluster, and per row besides:
#: measured peaks of robust K-means fits above the data (1,000,000 x 4 and
#: 200,000 x 50 rows, 4 clusters: 362 and 1260 bytes a row).
FIT_BYTES_PER_FEATURE = 24
FIT_BYTES_PER_CLUSTER = 48
FIT_BYTES_PER_ROW = 96
#: Address space the BLAS library maps for its work buffers, per thread (it
#: counts against ``ulimit -v``; a BLAS that found none spun in its allocator).
BLAS_BUFFER_BYTES = 64 << 20


def fit_bytes(n_rows, n_features, n_clusters):
    """About the bytes a (non-kernel) fit takes above its input matrix."""
    per_row = (FIT_BYTES_PER_FEATURE * n_features + FIT_BYTES_PER_CLUSTER * n_clusters
               + FIT_BYTES_PER_ROW)
    return int(n_rows) * per_row


def human_bytes(n):
    """'9.6 GB', '512 MB', '29.1 TB' (powers of 1000)."""
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if n < 1000 or unit == "TB":
            return f"{n:.3g} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1000
    return f"{n:.3g} TB"  # pragma: no cover
