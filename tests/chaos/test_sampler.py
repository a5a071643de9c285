import math
import os

from tests.chaos.sampler import group_memory_mb, parse_jstat_old_used_mb, pss_kb

# `jstat -gc` of an OpenJDK 17 G1 JVM, as printed.
JSTAT = [
    "    S0C         S1C         S0U         S1U          EC           EU           OC           OU          MC         MU       CCSC      CCSU     YGC     YGCT     FGC    FGCT     CGC    CGCT       GCT   ",  # noqa: E501
    "        0.0     16384.0         0.0     16384.0     262144.0      98304.0    1769472.0     524288.0    81920.0    80123.4   10240.0    9500.1     57     0.612     0     0.000    12     0.051     0.663",  # noqa: E501
    "",
]


def test_the_old_generation_is_read_by_its_column() -> None:
    assert parse_jstat_old_used_mb(JSTAT) == 512.0


def test_no_reading_is_nan_not_zero() -> None:
    assert math.isnan(parse_jstat_old_used_mb([]))
    assert math.isnan(parse_jstat_old_used_mb(["Could not attach to 123"]))


def test_memory_is_the_proportional_set_size() -> None:
    rollup = "00400000-7fff [rollup]\nRss:  1648 kB\nPss:  459 kB\nPss_Dirty: 112 kB\n"
    assert pss_kb(rollup) == 459
    assert pss_kb("") == 0
    assert group_memory_mb(os.getpid()) > 1  # this very process, read from /proc
