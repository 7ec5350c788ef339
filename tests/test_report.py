"""``transpile compile --report FILE.html``: the page a user opens, and the occupancy it computes."""

from __future__ import annotations

from transpile.cuda.arches import LIMITS, occupancy

# --- occupancy: hand-computed cases


def test_occupancy_threads_bound_at_full_occupancy() -> None:
    # 256 threads = 8 warps: 64 / 8 = 8 blocks by threads; 32 registers = 1024 a warp, 64 warps -> 8 blocks.
    o = occupancy(90, threads=256, registers=32)
    assert (o.blocks, o.fraction, o.limiter, o.percent) == (8, 1.0, "threads", "100%")


def test_occupancy_registers_round_up_per_warp() -> None:
    # gemm's tensor-core kernel on sm_90: 159 registers -> ceil(159 * 32 / 256) * 256 = 5120 a warp,
    # 65536 / 5120 = 12 warps -> 3 blocks of 4 warps; shared memory would allow 233472 / (34816 + 1024) = 6.
    o = occupancy(90, threads=128, registers=159, smem=34816)
    assert (o.blocks, o.limiter, o.percent) == (3, "registers", "19%")
    assert o.fraction == 3 * 4 / 64


def test_occupancy_shared_memory_bound_with_the_reserved_kilobyte() -> None:
    # sm_80: 164 KB = 167936 bytes; (48 KB + 1 KB reserved) a block -> 3 blocks of 256 threads of 2048.
    o = occupancy(80, threads=256, registers=32, smem=48 * 1024)
    assert (o.blocks, o.limiter, o.fraction) == (3, "shared memory", 0.375)
    # Without the reservation 167936 / 49152 would be 3 too; at 40 KB it tells: 167936 / 41984 = 4, not 4.1.
    assert occupancy(80, threads=128, registers=32, smem=40 * 1024 + 1).blocks == 3


def test_occupancy_block_count_bound_per_architecture() -> None:
    # One warp a block: sm_86 holds 16 blocks (16 of its 48 warps), sm_89 24, sm_90 32 (of 64 warps).
    assert (occupancy(86, threads=32, registers=16).blocks, occupancy(86, threads=32, registers=16).limiter) == (16, "blocks")
    assert occupancy(86, threads=32, registers=16).fraction == 16 / 48
    assert occupancy(89, threads=32, registers=16).fraction == 24 / 48
    assert occupancy(90, threads=32, registers=16).fraction == 32 / 64


def test_occupancy_turing_and_a_block_that_cannot_fit() -> None:
    # sm_75 holds 1024 threads: one block of 1024 at 64 registers (2048 a warp, 32 warps) is all of it.
    o = occupancy(75, threads=1024, registers=64)
    assert (o.blocks, o.fraction) == (1, 1.0)
    # 65 registers -> 2304 a warp -> 28 warps: a 32-warp block does not fit.
    o = occupancy(75, threads=1024, registers=65)
    assert (o.blocks, o.fraction, o.limiter) == (0, 0.0, "registers")
    # A partial warp counts as a warp: 48 threads take 2 warps of sm_90's 64.
    assert occupancy(90, threads=48, registers=32).fraction == 32 * 2 / 64


def test_limits_cover_every_target() -> None:
    from transpile.cuda.arches import ARCHES

    assert sorted(LIMITS) == sorted(ARCHES)
    assert all(lim.registers == 65536 for lim in LIMITS.values())
