//! The device layer on the GPU: PTX special registers, barriers and shuffles.

use super::word::SharedWord;
use crate::launch::Dim3;
use core::arch::asm;
use core::arch::nvptx::*;
use core::sync::atomic::{AtomicU32, Ordering};

#[inline(always)]
pub fn thread_idx() -> Dim3 {
    // SAFETY: reading special registers has no preconditions inside a kernel.
    unsafe { Dim3::new(_thread_idx_x(), _thread_idx_y(), _thread_idx_z()) }
}

#[inline(always)]
pub fn block_idx() -> Dim3 {
    // SAFETY: as above.
    unsafe { Dim3::new(_block_idx_x(), _block_idx_y(), _block_idx_z()) }
}

#[inline(always)]
pub fn indices_again() -> (Dim3, Dim3, Dim3) {
    let (tx, ty, bx, by, gx, gy): (u32, u32, u32, u32, u32, u32);
    // SAFETY: reads of special registers; not `pure`, so that LLVM keeps them where written.
    unsafe {
        asm!(
            "mov.u32 {0}, %tid.x;",
            "mov.u32 {1}, %tid.y;",
            "mov.u32 {2}, %ctaid.x;",
            "mov.u32 {3}, %ctaid.y;",
            "mov.u32 {4}, %nctaid.x;",
            "mov.u32 {5}, %nctaid.y;",
            out(reg32) tx,
            out(reg32) ty,
            out(reg32) bx,
            out(reg32) by,
            out(reg32) gx,
            out(reg32) gy,
            options(nomem, nostack)
        )
    };
    let (t, b, g) = (thread_idx(), block_idx(), grid_dim());
    (Dim3::new(tx, ty, t.z), Dim3::new(bx, by, b.z), Dim3::new(gx, gy, g.z))
}

#[inline(always)]
pub fn block_dim() -> Dim3 {
    // SAFETY: as above.
    unsafe { Dim3::new(_block_dim_x(), _block_dim_y(), _block_dim_z()) }
}

#[inline(always)]
pub fn grid_dim() -> Dim3 {
    // SAFETY: as above.
    unsafe { Dim3::new(_grid_dim_x(), _grid_dim_y(), _grid_dim_z()) }
}

#[inline(always)]
pub fn sync_threads() {
    // SAFETY: bar.sync 0; the kernel's contract is that every thread of the block reaches it.
    unsafe { _syncthreads() }
}

#[inline(always)]
pub fn sync_warp() {
    // SAFETY: all 32 lanes take part (full member mask), as in __syncwarp().
    unsafe { asm!("bar.warp.sync 0xffffffff;") }
}

#[inline(always)]
pub fn lane_id() -> u32 {
    let lane: u32;
    // SAFETY: reads a special register.
    unsafe { asm!("mov.u32 {}, %laneid;", out(reg32) lane, options(pure, nomem, nostack)) };
    lane
}

#[inline(always)]
pub fn nanosleep(ns: u32) {
    // SAFETY: suspends this thread for a while; no operands besides the duration.
    unsafe { asm!("nanosleep.u32 {};", in(reg32) ns, options(nomem, nostack)) };
}

#[inline(always)]
pub fn compiler_barrier() {
    // SAFETY: no instruction; without `nomem`, LLVM takes it to read and write memory.
    unsafe { asm!("", options(nostack, preserves_flags)) };
}

#[inline(always)]
pub fn opaque(value: u32) -> u32 {
    let out: u32;
    // SAFETY: a register move. Not `pure`: LLVM then neither merges nor moves it.
    unsafe { asm!("mov.u32 {}, {};", out(reg32) out, in(reg32) value, options(nomem, nostack)) };
    out
}

// The `c` operand packs the clamp: 0x1f for down/bfly/idx (lanes past 31 read their own value),
// 0 for up (lanes below 0 read their own value). Not `pure`: shuffles are convergent, so they must
// not be moved into or out of branches.
macro_rules! shuffle {
    ($name:ident, $mode:literal, $clamp:literal) => {
        #[inline(always)]
        pub fn $name(bits: u32, operand: u32) -> u32 {
            let out: u32;
            // SAFETY: full member mask; every lane of the warp executes the shuffle.
            unsafe {
                asm!(
                    concat!("shfl.sync.", $mode, ".b32 {}, {}, {}, ", $clamp, ", 0xffffffff;"),
                    out(reg32) out, in(reg32) bits, in(reg32) operand,
                )
            };
            out
        }
    };
}

shuffle!(shfl_xor, "bfly", "0x1f");
shuffle!(shfl_down, "down", "0x1f");
shuffle!(shfl_up, "up", "0x0");
shuffle!(shfl_idx, "idx", "0x1f");

#[inline(always)]
pub fn fma(a: f32, b: f32, c: f32) -> f32 {
    core::intrinsics::fmaf32(a, b, c)
}

#[inline(always)]
pub fn sqrt(x: f32) -> f32 {
    let y: f32;
    // SAFETY: arithmetic on registers.
    unsafe { asm!("sqrt.rn.f32 {}, {};", out(reg32) y, in(reg32) x, options(pure, nomem, nostack)) };
    y
}

#[inline(always)]
pub fn max_nan(a: f32, b: f32) -> f32 {
    let y: f32;
    // SAFETY: arithmetic on registers.
    unsafe { asm!("max.NaN.f32 {}, {}, {};", out(reg32) y, in(reg32) a, in(reg32) b, options(pure, nomem, nostack)) };
    y
}

#[inline(always)]
pub fn exp2_approx(x: f32) -> f32 {
    let y: f32;
    // SAFETY: arithmetic on registers.
    unsafe { asm!("ex2.approx.ftz.f32 {}, {};", out(reg32) y, in(reg32) x, options(pure, nomem, nostack)) };
    y
}

#[inline(always)]
pub fn log2_approx(x: f32) -> f32 {
    let y: f32;
    // SAFETY: arithmetic on registers.
    unsafe { asm!("lg2.approx.ftz.f32 {}, {};", out(reg32) y, in(reg32) x, options(pure, nomem, nostack)) };
    y
}

#[inline(always)]
pub fn clock64() -> u64 {
    let clock: u64;
    // SAFETY: reads a special register. Volatile (no `pure`): two reads must not be merged.
    unsafe { asm!("mov.u64 {}, %clock64;", out(reg64) clock, options(nomem, nostack)) };
    clock
}

#[inline(always)]
pub fn dynamic_shared_bytes() -> u32 {
    let bytes: u32;
    // SAFETY: reads a special register (PTX ISA 4.1+).
    unsafe { asm!("mov.u32 {}, %dynamic_smem_size;", out(reg32) bytes, options(pure, nomem, nostack)) };
    bytes
}

/// Base alignment of dynamic shared memory: 16 bytes, enough for vector loads.
#[repr(C, align(16))]
struct Align16([u8; 16]);

#[inline(always)]
pub fn dynamic_shared_base() -> *mut u8 {
    core::intrinsics::gpu::gpu_launch_sized_workgroup_mem::<Align16>().cast::<u8>()
}

/// Ends the kernel with an error the host sees at its next synchronisation (`trap`).
#[inline(always)]
pub fn trap() -> ! {
    core::intrinsics::abort()
}

#[inline(always)]
pub unsafe fn shared_load<T: SharedWord>(ptr: *const T) -> T {
    // SAFETY: the caller passes a pointer into this block's dynamic shared memory.
    unsafe { ptr.read() }
}

#[inline(always)]
pub unsafe fn shared_load_volatile<T: SharedWord>(ptr: *const T) -> T {
    // SAFETY: as in `shared_load`.
    unsafe { ptr.read_volatile() }
}

/// A load through a global view: a plain `ld.global`.
///
/// # Safety
/// `ptr` is valid for a read of `T`.
#[inline(always)]
pub unsafe fn global_load<T: Copy>(ptr: *const T) -> T {
    // SAFETY: forwarded from the caller.
    unsafe { ptr.read() }
}

/// A store through a global view: a plain `st.global`.
///
/// # Safety
/// `ptr` is valid for a write of `T`.
#[inline(always)]
pub unsafe fn global_write<T: Copy>(ptr: *mut T, value: T) {
    // SAFETY: forwarded from the caller.
    unsafe { ptr.write(value) }
}

#[inline(always)]
pub unsafe fn global_store<T: Copy>(ptr: *mut T, value: T) {
    // SAFETY: the caller passes a pointer valid for the write.
    unsafe { ptr.write(value) }
}

#[inline(always)]
pub unsafe fn shared_store<T: SharedWord>(ptr: *mut T, value: T) {
    // SAFETY: as in `shared_load`.
    unsafe { ptr.write(value) }
}

// Atomics and ordered accesses on global memory. Kernel pointers are generic addresses;
// `cvta.to.global` turns one into the global window's address, as nvcc does for its parameters.
macro_rules! global_rmw {
    ($($name:ident: $t:ty, $reg:ident, $op:literal);* $(;)?) => {$(
        #[inline(always)]
        pub unsafe fn $name(ptr: *mut $t, value: $t) -> $t {
            let old: $t;
            // SAFETY: the caller passes an aligned element of global memory.
            unsafe {
                asm!(
                    concat!("{{ .reg .u64 a; cvta.to.global.u64 a, {p}; atom.global.", $op, " {o}, [a], {v}; }}"),
                    p = in(reg64) ptr, o = out($reg) old, v = in($reg) value, options(nostack),
                )
            };
            old
        }
    )*};
}

global_rmw! {
    atomic_add_f32: f32, reg32, "add.f32";
    atomic_add_u32: u32, reg32, "add.u32";
    atomic_add_i32: i32, reg32, "add.s32";
    atomic_add_u64: u64, reg64, "add.u64";
    atomic_min_u32: u32, reg32, "min.u32";
    atomic_max_u32: u32, reg32, "max.u32";
    atomic_min_i32: i32, reg32, "min.s32";
    atomic_max_i32: i32, reg32, "max.s32";
    atomic_exch_u32: u32, reg32, "exch.b32";
    atomic_exch_u64: u64, reg64, "exch.b64";
}

macro_rules! global_red {
    ($($name:ident: $t:ty, $reg:ident, $op:literal);* $(;)?) => {$(
        #[inline(always)]
        pub unsafe fn $name(ptr: *mut $t, value: $t) {
            // SAFETY: as in `global_rmw!`.
            unsafe {
                asm!(
                    concat!("{{ .reg .u64 a; cvta.to.global.u64 a, {p}; red.global.", $op, " [a], {v}; }}"),
                    p = in(reg64) ptr, v = in($reg) value, options(nostack),
                )
            };
        }
    )*};
}

global_red! {
    red_add_f32: f32, reg32, "add.f32";
    red_add_u32: u32, reg32, "add.u32";
    red_add_i32: i32, reg32, "add.s32";
    red_add_u64: u64, reg64, "add.u64";
}

macro_rules! global_cas {
    ($($name:ident: $t:ty, $reg:ident, $op:literal);* $(;)?) => {$(
        #[inline(always)]
        pub unsafe fn $name(ptr: *mut $t, expected: $t, new: $t) -> $t {
            let old: $t;
            // SAFETY: as in `global_rmw!`.
            unsafe {
                asm!(
                    concat!("{{ .reg .u64 a; cvta.to.global.u64 a, {p}; atom.global.", $op, " {o}, [a], {e}, {n}; }}"),
                    p = in(reg64) ptr, o = out($reg) old, e = in($reg) expected, n = in($reg) new,
                    options(nostack),
                )
            };
            old
        }
    )*};
}

global_cas! {
    atomic_cas_u32: u32, reg32, "cas.b32";
    atomic_cas_u64: u64, reg64, "cas.b64";
}

macro_rules! global_load {
    ($($name:ident: $t:ty, $reg:ident, $op:literal);* $(;)?) => {$(
        #[inline(always)]
        pub unsafe fn $name(ptr: *const $t) -> $t {
            let value: $t;
            // SAFETY: as in `global_rmw!`. Not `readonly`: an acquire orders later accesses.
            unsafe {
                asm!(
                    concat!("{{ .reg .u64 a; cvta.to.global.u64 a, {p}; ld.", $op, " {o}, [a]; }}"),
                    p = in(reg64) ptr, o = out($reg) value, options(nostack),
                )
            };
            value
        }
    )*};
}

global_load! {
    load_acquire_u32: u32, reg32, "acquire.gpu.global.u32";
    load_acquire_u64: u64, reg64, "acquire.gpu.global.u64";
    load_relaxed_u32: u32, reg32, "relaxed.gpu.global.u32";
    load_relaxed_u64: u64, reg64, "relaxed.gpu.global.u64";
}

macro_rules! global_store_ordered {
    ($($name:ident: $t:ty, $reg:ident, $op:literal);* $(;)?) => {$(
        #[inline(always)]
        pub unsafe fn $name(ptr: *mut $t, value: $t) {
            // SAFETY: as in `global_rmw!`.
            unsafe {
                asm!(
                    concat!("{{ .reg .u64 a; cvta.to.global.u64 a, {p}; st.", $op, " [a], {v}; }}"),
                    p = in(reg64) ptr, v = in($reg) value, options(nostack),
                )
            };
        }
    )*};
}

global_store_ordered! {
    store_release_u32: u32, reg32, "release.gpu.global.u32";
    store_release_u64: u64, reg64, "release.gpu.global.u64";
    store_relaxed_u32: u32, reg32, "relaxed.gpu.global.u32";
    store_relaxed_u64: u64, reg64, "relaxed.gpu.global.u64";
}

// Shared-memory atomics. u32 is LLVM's own atomic (relaxed, as `atom` without qualifiers): LLVM
// sees that a view's address is in the shared window and emits `atom.shared` on it directly,
// where inline PTX gets a generic address and converts it (`cvta.to.shared`) at every call: a
// special-register read and three moves per atomic in the SASS. f32 has no atomic type in core:
// inline PTX, converting.
#[inline(always)]
pub unsafe fn shared_atomic_add_u32(ptr: *mut u32, value: u32) -> u32 {
    // SAFETY: the caller passes an aligned element of this block's shared memory, which no plain
    // access touches between the same barriers.
    unsafe { AtomicU32::from_ptr(ptr) }.fetch_add(value, Ordering::Relaxed)
}

macro_rules! shared_rmw {
    ($($name:ident: $t:ty, $op:literal);* $(;)?) => {$(
        #[inline(always)]
        pub unsafe fn $name(ptr: *mut $t, value: $t) -> $t {
            let old: $t;
            // SAFETY: the caller passes an aligned element of this block's shared memory.
            unsafe {
                asm!(
                    concat!("{{ .reg .u64 a; cvta.to.shared.u64 a, {p}; atom.shared.", $op, " {o}, [a], {v}; }}"),
                    p = in(reg64) ptr, o = out(reg32) old, v = in(reg32) value, options(nostack),
                )
            };
            old
        }
    )*};
}

shared_rmw! {
    shared_atomic_add_f32: f32, "add.f32";
}

#[inline(always)]
pub fn thread_fence() {
    // SAFETY: a fence has no operands.
    unsafe { asm!("fence.sc.gpu;", options(nostack)) }
}

#[inline(always)]
pub fn thread_fence_acq_rel() {
    // SAFETY: a fence has no operands.
    unsafe { asm!("fence.acq_rel.gpu;", options(nostack)) }
}

#[inline(always)]
pub fn thread_fence_block() {
    // SAFETY: a fence has no operands.
    unsafe { asm!("fence.sc.cta;", options(nostack)) }
}

// Warp votes over all 32 lanes (full member mask). Convergent like the shuffles: not `pure`.
macro_rules! vote {
    ($($name:ident: $mode:literal);*) => {$(
        #[inline(always)]
        pub fn $name(predicate: bool) -> bool {
            let out: u32;
            // SAFETY: every lane of the warp executes the vote.
            unsafe {
                asm!(
                    concat!("{{ .reg .pred p, q; setp.ne.u32 p, {x}, 0; vote.sync.", $mode, ".pred q, p, 0xffffffff; selp.u32 {o}, 1, 0, q; }}"),
                    x = in(reg32) predicate as u32, o = out(reg32) out, options(nostack),
                )
            };
            out != 0
        }
    )*};
}

vote! { vote_all: "all"; vote_any: "any" }

#[inline(always)]
pub fn match_any(value: u32) -> u32 {
    let out: u32;
    // SAFETY: every lane of the warp executes the match (sm_70+).
    unsafe {
        asm!(
            "match.any.sync.b32 {o}, {v}, 0xffffffff;",
            o = out(reg32) out, v = in(reg32) value, options(nostack),
        )
    };
    out
}

#[inline(always)]
pub fn ballot(predicate: bool) -> u32 {
    let out: u32;
    // SAFETY: every lane of the warp executes the vote.
    unsafe {
        asm!(
            "{{ .reg .pred p; setp.ne.u32 p, {x}, 0; vote.sync.ballot.b32 {o}, p, 0xffffffff; }}",
            x = in(reg32) predicate as u32, o = out(reg32) out, options(nostack),
        )
    };
    out
}

/// The `.shared` window address of a generic pointer into shared memory.
#[inline(always)]
pub fn shared_address<T>(ptr: *const T) -> u32 {
    let address: u32;
    // SAFETY: register arithmetic only.
    unsafe {
        asm!(
            "{{ .reg .u64 s; cvta.to.shared.u64 s, {p}; cvt.u32.u64 {a}, s; }}",
            p = in(reg64) ptr, a = out(reg32) address, options(pure, nomem, nostack),
        )
    };
    address
}

/// The `.shared` window address of `dst`, an element of the shared region that starts at `base`:
/// the base's address (computed once per kernel when `base` does not change: a pure instruction)
/// plus the byte offset, in 32-bit arithmetic. Converting `dst` itself at every copy made ptxas
/// rebuild the 64-bit generic address each time (a special-register read, a wide multiply-add
/// and three moves per copy: docs/perf-log.md, change 79).
#[inline(always)]
fn shared_address_in<T, U>(base: *const T, dst: *const U) -> u32 {
    shared_address(base).wrapping_add((dst as usize).wrapping_sub(base as usize) as u32)
}

/// `cp.async` of 16 bytes, global to shared, cached in the L2 only; `dst` in the shared region
/// that starts at `base`.
#[inline(always)]
pub unsafe fn copy16_async<T>(base: *const T, dst: *mut super::Float4, src: *const f32) {
    // SAFETY: the caller passes an aligned shared destination and an aligned global source.
    unsafe {
        asm!(
            "{{ .reg .u64 g; cvta.to.global.u64 g, {p}; cp.async.cg.shared.global [{d}], [g], 16; }}",
            d = in(reg32) shared_address_in(base, dst), p = in(reg64) src, options(nostack),
        )
    };
}

/// As [`copy16_async`], reading `valid` floats and zero-filling the rest (the source size).
#[inline(always)]
pub unsafe fn copy16_async_zero_fill<T>(base: *const T, dst: *mut super::Float4, src: *const f32, valid: u32) {
    // SAFETY: the caller passes an aligned shared destination and an aligned global source.
    unsafe {
        asm!(
            "{{ .reg .u64 g; cvta.to.global.u64 g, {p}; cp.async.cg.shared.global [{d}], [g], 16, {n}; }}",
            d = in(reg32) shared_address_in(base, dst), p = in(reg64) src, n = in(reg32) 4 * valid, options(nostack),
        )
    };
}

/// `cp.async` of 4 bytes, global to shared, through the L1 (`.ca`: `.cg` copies 16 bytes only);
/// `valid` (0 or 1) floats read, a zero written otherwise.
#[inline(always)]
pub unsafe fn copy4_async<T>(base: *const T, dst: *mut f32, src: *const f32, valid: u32) {
    // SAFETY: the caller passes an aligned shared destination and an aligned global source.
    unsafe {
        asm!(
            "{{ .reg .u64 g; cvta.to.global.u64 g, {p}; cp.async.ca.shared.global [{d}], [g], 4, {n}; }}",
            d = in(reg32) shared_address_in(base, dst), p = in(reg64) src, n = in(reg32) 4 * valid, options(nostack),
        )
    };
}

#[inline(always)]
pub fn async_copy_commit() {
    // SAFETY: closes this thread's group of copies; no operands.
    unsafe { asm!("cp.async.commit_group;", options(nostack)) };
}

#[inline(always)]
pub fn async_copy_wait<const PENDING: u32>() {
    // SAFETY: waits for this thread's copies; it may write shared memory (no `nomem`), so the
    // compiler keeps shared loads after it.
    unsafe { asm!("cp.async.wait_group {n};", n = const PENDING, options(nostack)) };
}

// Tensor-core products: four f32 accumulators from four A registers, two B registers and four C
// accumulators. Not `pure`: warp-collective, so they must not be moved into or out of branches;
// no memory is touched.
macro_rules! mma {
    ($name:ident, $instruction:literal) => {
        #[inline(always)]
        pub fn $name(a: [u32; 4], b: [u32; 2], c: [f32; 4]) -> [f32; 4] {
            let (d0, d1, d2, d3): (f32, f32, f32, f32);
            // SAFETY: register operands only; every lane of the warp executes it (the caller's
            // promise).
            unsafe {
                asm!(
                    concat!($instruction, " {{{}, {}, {}, {}}}, {{{}, {}, {}, {}}}, {{{}, {}}}, {{{}, {}, {}, {}}};"),
                    out(reg32) d0, out(reg32) d1, out(reg32) d2, out(reg32) d3,
                    in(reg32) a[0], in(reg32) a[1], in(reg32) a[2], in(reg32) a[3],
                    in(reg32) b[0], in(reg32) b[1],
                    in(reg32) c[0], in(reg32) c[1], in(reg32) c[2], in(reg32) c[3],
                    options(nomem, nostack),
                )
            };
            [d0, d1, d2, d3]
        }
    };
}

mma!(mma_bf16_m16n8k16, "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32");
mma!(mma_f16_m16n8k16, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32");
mma!(mma_tf32_m16n8k8, "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32");

macro_rules! ldmatrix {
    ($name:ident, $instruction:literal, $registers:literal, [$($r:ident),+]) => {
        /// `ldmatrix` from the generic address of this lane's row.
        #[inline(always)]
        pub unsafe fn $name(row: *const u32) -> [u32; [$(stringify!($r)),+].len()] {
            $(let $r: u32;)+
            // SAFETY: the caller passes an aligned address in shared memory; every lane executes it.
            unsafe {
                asm!(
                    concat!("{{ .reg .u64 s; .reg .u32 s32; cvta.to.shared.u64 s, {p}; cvt.u32.u64 s32, s; ", $instruction, " {{", $registers, "}}, [s32]; }}"),
                    $(out(reg32) $r,)+
                    p = in(reg64) row,
                    options(nostack, readonly),
                )
            };
            [$($r),+]
        }
    };
}
ldmatrix!(ldmatrix_x1, "ldmatrix.sync.aligned.m8n8.x1.shared.b16", "{}", [r0]);
ldmatrix!(
    ldmatrix_x1_trans,
    "ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16",
    "{}",
    [r0]
);
ldmatrix!(
    ldmatrix_x2,
    "ldmatrix.sync.aligned.m8n8.x2.shared.b16",
    "{}, {}",
    [r0, r1]
);
ldmatrix!(
    ldmatrix_x2_trans,
    "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16",
    "{}, {}",
    [r0, r1]
);
ldmatrix!(
    ldmatrix_x4,
    "ldmatrix.sync.aligned.m8n8.x4.shared.b16",
    "{}, {}, {}, {}",
    [r0, r1, r2, r3]
);
ldmatrix!(
    ldmatrix_x4_trans,
    "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16",
    "{}, {}, {}, {}",
    [r0, r1, r2, r3]
);

/// `ldmatrix` of `N` matrices (1, 2 or 4), transposed where `trans`: the instruction of that form.
#[inline(always)]
pub unsafe fn ldmatrix<const N: usize>(row: *const u32, trans: bool) -> [u32; N] {
    const { assert!(N == 1 || N == 2 || N == 4, "ldmatrix loads 1, 2 or 4 matrices") };
    let mut registers = [0u32; N];
    // SAFETY (every form): forwarded from the caller.
    unsafe {
        match (N, trans) {
            (1, false) => registers.copy_from_slice(&ldmatrix_x1(row)),
            (1, true) => registers.copy_from_slice(&ldmatrix_x1_trans(row)),
            (2, false) => registers.copy_from_slice(&ldmatrix_x2(row)),
            (2, true) => registers.copy_from_slice(&ldmatrix_x2_trans(row)),
            (_, false) => registers.copy_from_slice(&ldmatrix_x4(row)),
            (_, true) => registers.copy_from_slice(&ldmatrix_x4_trans(row)),
        }
    }
    registers
}

unsafe extern "C" {
    /// The device runtime's `vprintf`, which the driver provides to every module.
    #[link_name = "vprintf"]
    fn device_vprintf(format: *const u8, args: *const u8) -> i32;
}

/// # Safety
/// `format` is NUL-terminated; `args` points to the promoted arguments laid out as C lays out a
/// struct of them.
#[inline(always)]
pub unsafe fn vprintf(format: *const u8, args: *const u8) {
    // SAFETY: forwarded from the caller.
    unsafe { device_vprintf(format, args) };
}
