//! Hopper's warpgroup matrix multiply (`wgmma.mma_async`, sm_90a only): the four warps of a
//! warpgroup multiply a 64×16 tile of A by a 16×N tile of B, both read straight from shared memory
//! through *matrix descriptors*, into f32 accumulators spread over the warpgroup's 128 lanes as
//! mma.sync's 16×8 accumulators are over a warp (warp w of the group holds rows 16·w to 16·w + 15,
//! register 4·j + r at row `group + 8·(r / 2)`, column `8·j + 2·member + r % 2`).
//!
//! The operands' shared-memory layout is the 128-byte swizzle: each row of a tile is 128 bytes
//! (64 bf16), its eight 16-byte chunks stored at chunk `c ^ (row % 8)`, and eight rows form a
//! 1024-byte atom that must start 1024-byte aligned. A is K-major (rows of A, k along the row),
//! B is MN-major (rows of k, n along the row, 64 columns per atom): the layouts `cp.async` fills
//! from row-major A and B without a transpose.
//!
//! Only the GPU has these: the emulator does not model a warpgroup's asynchronous multiply, so the
//! kernels that use them are GPU-only (`kernel_sm90a!`).

use core::arch::asm;

/// A shared-memory matrix descriptor for the 128-byte swizzle.
#[derive(Clone, Copy)]
pub struct Descriptor(pub u64);

impl Descriptor {
    /// The matrix starting at shared address `address` (the `.shared` window's, 16-byte units
    /// kept), atoms of eight rows `stride` bytes apart, and (MN-major only) 64-column atoms
    /// `leading` bytes apart.
    #[inline(always)]
    pub const fn swizzle_128(address: u32, leading: u32, stride: u32) -> Descriptor {
        Descriptor(field(address) | (field(leading) << 16) | (field(stride) << 32) | (1u64 << 62))
    }

    /// The same descriptor, computed here: an empty `asm!` that the compiler keeps in order with
    /// the other `asm!`s, so that it cannot sink the computation between two `wgmma` groups
    /// (where ptxas, seeing a wgmma input defined while another group is in flight, serialises
    /// them: its note C7513).
    #[inline(always)]
    pub fn pinned(self) -> Descriptor {
        let mut bits = self.0;
        // SAFETY: a register move.
        unsafe { asm!("mov.b64 {0}, {0};", inout(reg64) bits, options(nostack)) };
        Descriptor(bits)
    }

    /// The same matrix `bytes` further on (a k-step inside a swizzled row, or the next atoms).
    #[inline(always)]
    pub const fn offset(self, bytes: u32) -> Descriptor {
        Descriptor(self.0 + (bytes >> 4) as u64)
    }
}

/// A descriptor's 14-bit field: bytes in 16-byte units.
#[inline]
const fn field(bytes: u32) -> u64 {
    ((bytes >> 4) & 0x3fff) as u64
}

pub use super::nvptx::shared_address;

/// `fence.proxy.async.shared::cta`: this thread's writes to shared memory (stores, `cp.async`)
/// become visible to the async proxy that `wgmma` reads through. Before the barrier that
/// publishes a stage.
#[inline(always)]
pub fn fence_proxy_async() {
    // SAFETY: a fence; no operands.
    unsafe { asm!("fence.proxy.async.shared::cta;", options(nostack)) };
}

/// `wgmma.fence`: orders this warpgroup's register accesses before the next `wgmma`s.
#[inline(always)]
pub fn wgmma_fence() {
    // SAFETY: a fence; every lane of the warpgroup calls it.
    unsafe { asm!("wgmma.fence.sync.aligned;", options(nostack)) };
}

/// `wgmma.commit_group`: closes the group of `wgmma`s issued since the last one.
#[inline(always)]
pub fn wgmma_commit() {
    // SAFETY: no operands; every lane of the warpgroup calls it.
    unsafe { asm!("wgmma.commit_group.sync.aligned;", options(nostack)) };
}

/// `wgmma.wait_group N`: waits until at most `N` groups are in flight; their accumulators are
/// then written.
#[inline(always)]
pub fn wgmma_wait<const N: u32>() {
    // SAFETY: no operands; every lane of the warpgroup calls it.
    unsafe { asm!("wgmma.wait_group.sync.aligned {n};", n = const N, options(nostack)) };
}

/// Defines `$name((low, high), a, b)`: `acc += A·B` for the warpgroup by the 64×256 `wgmma`
/// `$instruction` (its trailing immediates `$immediates`), A by a descriptor or in four registers
/// per lane, B by a descriptor; `low` and `high` this lane's 128 f32 of the 64×256 product,
/// columns 0–127 and 128–255. Two halves because LLVM leaves an array of 128 in local memory where
/// it keeps two of 64 in registers (38 KB of stack, measured). Asynchronous: the accumulators are
/// written at the [`wgmma_wait`] that covers their group, and must not be touched before.
macro_rules! wgmma_m64n256 {
    ($(#[$meta:meta])* $name:ident, $instruction:literal, descriptor, $immediates:literal) => {
        wgmma_m64n256!(@define $(#[$meta])* $name, $instruction, $immediates,
            a: Descriptor, "{a}", (a = in(reg64) a.0), [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63]);
    };
    ($(#[$meta:meta])* $name:ident, $instruction:literal, registers, $immediates:literal) => {
        wgmma_m64n256!(@define $(#[$meta])* $name, $instruction, $immediates,
            a: [u32; 4], "{{{a0}, {a1}, {a2}, {a3}}}",
            (a0 = in(reg32) a[0], a1 = in(reg32) a[1], a2 = in(reg32) a[2], a3 = in(reg32) a[3]), [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63]);
    };
    (@define $(#[$meta:meta])* $name:ident, $instruction:literal, $immediates:literal,
        $a:ident: $a_type:ty, $a_operand:literal, ($($a_binding:tt)*), [$($i:literal)*]) => {
        $(#[$meta])*
        #[inline(always)]
        pub fn $name((low, high): (&mut [f32; 64], &mut [f32; 64]), $a: $a_type, b: Descriptor) {
            // SAFETY: the descriptors address shared memory the caller staged; every lane of the
            // warpgroup executes it together.
            unsafe {
                asm!(
                    concat!(
                        "{{ .reg .pred p; setp.ne.b32 p, {one}, 0; ",
                        $instruction,
                        " {{{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}, {8}, {9}, {10}, {11}, {12}, {13}, {14}, {15}, {16}, {17}, {18}, {19}, {20}, {21}, {22}, {23}, {24}, {25}, {26}, {27}, {28}, {29}, {30}, {31}, {32}, {33}, {34}, {35}, {36}, {37}, {38}, {39}, {40}, {41}, {42}, {43}, {44}, {45}, {46}, {47}, {48}, {49}, {50}, {51}, {52}, {53}, {54}, {55}, {56}, {57}, {58}, {59}, {60}, {61}, {62}, {63}, {64}, {65}, {66}, {67}, {68}, {69}, {70}, {71}, {72}, {73}, {74}, {75}, {76}, {77}, {78}, {79}, {80}, {81}, {82}, {83}, {84}, {85}, {86}, {87}, {88}, {89}, {90}, {91}, {92}, {93}, {94}, {95}, {96}, {97}, {98}, {99}, {100}, {101}, {102}, {103}, {104}, {105}, {106}, {107}, {108}, {109}, {110}, {111}, {112}, {113}, {114}, {115}, {116}, {117}, {118}, {119}, {120}, {121}, {122}, {123}, {124}, {125}, {126}, {127}}}, ",
                        $a_operand,
                        ", {b}, p, ",
                        $immediates,
                        "; }}"
                    ),
                    $(inout(reg32) low[$i],)*
                    $(inout(reg32) high[$i],)*
                    one = in(reg32) 1u32,
                    $($a_binding)*,
                    b = in(reg64) b.0,
                    options(nostack),
                )
            };
        }
    };
}

wgmma_m64n256!(
    /// A 64×16 bf16 (K-major, descriptor `a`) times B 16×256 bf16 (MN-major, descriptor `b`, 4
    /// atoms of 64 columns): `wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16`, B transposed.
    wgmma_m64n256k16_bf16,
    "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16",
    descriptor,
    "1, 1, 0, 1"
);

wgmma_m64n256!(
    /// A 64×8 tf32 in registers (lane l of warp w holding rows `16·w + l / 4` and `+ 8`, columns
    /// `l % 4` and `+ 4`, in mma.sync's m16n8k8 order, see [`crate::device::mma::tf32_a_position`])
    /// times B 8×256 tf32 given as its 256×8 transpose, rows of k (K-major, descriptor `b`):
    /// `wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32`. TF32's B must be K-major (the
    /// instruction has no transpose for it); each f32 is read with its lower 13 mantissa bits
    /// ignored.
    wgmma_m64n256k8_tf32_registers,
    "wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32",
    registers,
    "1, 1"
);

/// Defines `$name(acc, a, b)`: `acc += A·B` for the warpgroup by a 64×128 or 64×64 `wgmma`
/// `$instruction` (its trailing immediates `$immediates`), A by a descriptor or in four registers
/// per lane, B by a descriptor; `acc` this lane's 64 or 32 f32 of the product. Asynchronous, as
/// those of `wgmma_m64n256!`.
macro_rules! wgmma_one_array {
    ($(#[$meta:meta])* $name:ident, n128, $instruction:literal, $form:ident, $immediates:literal) => {
        wgmma_one_array!(@form $(#[$meta])* $name, $instruction, $form, $immediates, 64,
            " {{{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}, {8}, {9}, {10}, {11}, {12}, {13}, {14}, {15}, {16}, {17}, {18}, {19}, {20}, {21}, {22}, {23}, {24}, {25}, {26}, {27}, {28}, {29}, {30}, {31}, {32}, {33}, {34}, {35}, {36}, {37}, {38}, {39}, {40}, {41}, {42}, {43}, {44}, {45}, {46}, {47}, {48}, {49}, {50}, {51}, {52}, {53}, {54}, {55}, {56}, {57}, {58}, {59}, {60}, {61}, {62}, {63}}}, ", [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63]);
    };
    ($(#[$meta:meta])* $name:ident, n64, $instruction:literal, $form:ident, $immediates:literal) => {
        wgmma_one_array!(@form $(#[$meta])* $name, $instruction, $form, $immediates, 32,
            " {{{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}, {8}, {9}, {10}, {11}, {12}, {13}, {14}, {15}, {16}, {17}, {18}, {19}, {20}, {21}, {22}, {23}, {24}, {25}, {26}, {27}, {28}, {29}, {30}, {31}}}, ", [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31]);
    };
    ($(#[$meta:meta])* $name:ident, n16, $instruction:literal, $form:ident, $immediates:literal) => {
        wgmma_one_array!(@form $(#[$meta])* $name, $instruction, $form, $immediates, 8,
            " {{{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}}}, ", [0 1 2 3 4 5 6 7]);
    };
    (@form $(#[$meta:meta])* $name:ident, $instruction:literal, descriptor, $immediates:literal, $len:literal,
        $registers:literal, $indices:tt) => {
        wgmma_one_array!(@define $(#[$meta])* $name, $instruction, $immediates, $len, $registers,
            a: Descriptor, "{a}", (a = in(reg64) a.0), $indices);
    };
    (@form $(#[$meta:meta])* $name:ident, $instruction:literal, registers, $immediates:literal, $len:literal,
        $registers:literal, $indices:tt) => {
        wgmma_one_array!(@define $(#[$meta])* $name, $instruction, $immediates, $len, $registers,
            a: [u32; 4], "{{{a0}, {a1}, {a2}, {a3}}}",
            (a0 = in(reg32) a[0], a1 = in(reg32) a[1], a2 = in(reg32) a[2], a3 = in(reg32) a[3]), $indices);
    };
    (@define $(#[$meta:meta])* $name:ident, $instruction:literal, $immediates:literal, $len:literal,
        $registers:literal, $a:ident: $a_type:ty, $a_operand:literal, ($($a_binding:tt)*), [$($i:literal)*]) => {
        $(#[$meta])*
        #[inline(always)]
        pub fn $name(acc: &mut [f32; $len], $a: $a_type, b: Descriptor) {
            // SAFETY: the descriptors address shared memory the caller staged; every lane of the
            // warpgroup executes it together.
            unsafe {
                asm!(
                    concat!(
                        "{{ .reg .pred p; setp.ne.b32 p, {one}, 0; ",
                        $instruction,
                        $registers,
                        $a_operand,
                        ", {b}, p, ",
                        $immediates,
                        "; }}"
                    ),
                    $(inout(reg32) acc[$i],)*
                    one = in(reg32) 1u32,
                    $($a_binding)*,
                    b = in(reg64) b.0,
                    options(nostack),
                )
            };
        }
    };
}

wgmma_one_array!(
    /// `acc += A·B` for the warpgroup: A 64×16 bf16 (K-major, descriptor `a`), B 16×128 bf16
    /// (MN-major, descriptor `b`, 2 atoms of 64 columns), `acc` this lane's 64 f32 of the
    /// 64×128 product (`wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16`, B transposed).
    /// Asynchronous: `acc` is written at the [`wgmma_wait`] that covers its group, and must not be
    /// touched before.
    wgmma_m64n128k16_bf16,
    n128,
    "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16",
    descriptor,
    "1, 1, 0, 1"
);

wgmma_one_array!(
    /// As [`wgmma_m64n256k8_tf32_registers`] with B 8×128 (its 128×8 transpose by descriptor `b`):
    /// `wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32`.
    wgmma_m64n128k8_tf32_registers,
    n128,
    "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32",
    registers,
    "1, 1"
);

/// `acc += A·Bᵀ` for the warpgroup with both operands K-major: A 64×16 bf16 (descriptor `a`),
/// B given as its 128×16 transpose, rows of k (descriptor `b`: what a row-major K is to Q·Kᵀ);
/// `low` and `high` this lane's f32 of product columns 0–63 and 64–127
/// (`wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16`, neither transposed). Asynchronous, as
/// [`wgmma_m64n128k16_bf16`].
#[inline(always)]
pub fn wgmma_m64n128k16_bf16_k_major((low, high): (&mut [f32; 32], &mut [f32; 32]), a: Descriptor, b: Descriptor) {
    // SAFETY: the descriptors address shared memory the caller staged; every lane of the
    // warpgroup executes it together.
    unsafe {
        asm!(
            "{{ .reg .pred p; setp.ne.b32 p, {one}, 0; wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}, {8}, {9}, {10}, {11}, {12}, {13}, {14}, {15}, {16}, {17}, {18}, {19}, {20}, {21}, {22}, {23}, {24}, {25}, {26}, {27}, {28}, {29}, {30}, {31}, {32}, {33}, {34}, {35}, {36}, {37}, {38}, {39}, {40}, {41}, {42}, {43}, {44}, {45}, {46}, {47}, {48}, {49}, {50}, {51}, {52}, {53}, {54}, {55}, {56}, {57}, {58}, {59}, {60}, {61}, {62}, {63}}}, {a}, {b}, p, 1, 1, 0, 0; }}",
                inout(reg32) low[0],
                inout(reg32) low[1],
                inout(reg32) low[2],
                inout(reg32) low[3],
                inout(reg32) low[4],
                inout(reg32) low[5],
                inout(reg32) low[6],
                inout(reg32) low[7],
                inout(reg32) low[8],
                inout(reg32) low[9],
                inout(reg32) low[10],
                inout(reg32) low[11],
                inout(reg32) low[12],
                inout(reg32) low[13],
                inout(reg32) low[14],
                inout(reg32) low[15],
                inout(reg32) low[16],
                inout(reg32) low[17],
                inout(reg32) low[18],
                inout(reg32) low[19],
                inout(reg32) low[20],
                inout(reg32) low[21],
                inout(reg32) low[22],
                inout(reg32) low[23],
                inout(reg32) low[24],
                inout(reg32) low[25],
                inout(reg32) low[26],
                inout(reg32) low[27],
                inout(reg32) low[28],
                inout(reg32) low[29],
                inout(reg32) low[30],
                inout(reg32) low[31],
                inout(reg32) high[0],
                inout(reg32) high[1],
                inout(reg32) high[2],
                inout(reg32) high[3],
                inout(reg32) high[4],
                inout(reg32) high[5],
                inout(reg32) high[6],
                inout(reg32) high[7],
                inout(reg32) high[8],
                inout(reg32) high[9],
                inout(reg32) high[10],
                inout(reg32) high[11],
                inout(reg32) high[12],
                inout(reg32) high[13],
                inout(reg32) high[14],
                inout(reg32) high[15],
                inout(reg32) high[16],
                inout(reg32) high[17],
                inout(reg32) high[18],
                inout(reg32) high[19],
                inout(reg32) high[20],
                inout(reg32) high[21],
                inout(reg32) high[22],
                inout(reg32) high[23],
                inout(reg32) high[24],
                inout(reg32) high[25],
                inout(reg32) high[26],
                inout(reg32) high[27],
                inout(reg32) high[28],
                inout(reg32) high[29],
                inout(reg32) high[30],
                inout(reg32) high[31],
                one = in(reg32) 1u32,
                a = in(reg64) a.0,
                b = in(reg64) b.0,
                options(nostack),
        )
    };
}

/// `acc += A·B` for the warpgroup with A from registers: `a` this lane's four registers of the
/// 64×16 bf16 A (warp w of the group rows 16·w to 16·w + 15, laid out as `mma.sync` m16n8k16's A),
/// B 16×128 MN-major (descriptor `b`, 2 atoms of 64 columns); `low` and `high` as in
/// [`wgmma_m64n128k16_bf16_k_major`]. Asynchronous; `a` is read when the group completes, so its
/// registers too must be left alone until the [`wgmma_wait`].
#[inline(always)]
pub fn wgmma_m64n128k16_bf16_registers((low, high): (&mut [f32; 32], &mut [f32; 32]), a: [u32; 4], b: Descriptor) {
    // SAFETY: the descriptors address shared memory the caller staged; every lane of the
    // warpgroup executes it together.
    unsafe {
        asm!(
            "{{ .reg .pred p; setp.ne.b32 p, {one}, 0; wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}, {8}, {9}, {10}, {11}, {12}, {13}, {14}, {15}, {16}, {17}, {18}, {19}, {20}, {21}, {22}, {23}, {24}, {25}, {26}, {27}, {28}, {29}, {30}, {31}, {32}, {33}, {34}, {35}, {36}, {37}, {38}, {39}, {40}, {41}, {42}, {43}, {44}, {45}, {46}, {47}, {48}, {49}, {50}, {51}, {52}, {53}, {54}, {55}, {56}, {57}, {58}, {59}, {60}, {61}, {62}, {63}}}, {{{a0}, {a1}, {a2}, {a3}}}, {b}, p, 1, 1, 1; }}",
                inout(reg32) low[0],
                inout(reg32) low[1],
                inout(reg32) low[2],
                inout(reg32) low[3],
                inout(reg32) low[4],
                inout(reg32) low[5],
                inout(reg32) low[6],
                inout(reg32) low[7],
                inout(reg32) low[8],
                inout(reg32) low[9],
                inout(reg32) low[10],
                inout(reg32) low[11],
                inout(reg32) low[12],
                inout(reg32) low[13],
                inout(reg32) low[14],
                inout(reg32) low[15],
                inout(reg32) low[16],
                inout(reg32) low[17],
                inout(reg32) low[18],
                inout(reg32) low[19],
                inout(reg32) low[20],
                inout(reg32) low[21],
                inout(reg32) low[22],
                inout(reg32) low[23],
                inout(reg32) low[24],
                inout(reg32) low[25],
                inout(reg32) low[26],
                inout(reg32) low[27],
                inout(reg32) low[28],
                inout(reg32) low[29],
                inout(reg32) low[30],
                inout(reg32) low[31],
                inout(reg32) high[0],
                inout(reg32) high[1],
                inout(reg32) high[2],
                inout(reg32) high[3],
                inout(reg32) high[4],
                inout(reg32) high[5],
                inout(reg32) high[6],
                inout(reg32) high[7],
                inout(reg32) high[8],
                inout(reg32) high[9],
                inout(reg32) high[10],
                inout(reg32) high[11],
                inout(reg32) high[12],
                inout(reg32) high[13],
                inout(reg32) high[14],
                inout(reg32) high[15],
                inout(reg32) high[16],
                inout(reg32) high[17],
                inout(reg32) high[18],
                inout(reg32) high[19],
                inout(reg32) high[20],
                inout(reg32) high[21],
                inout(reg32) high[22],
                inout(reg32) high[23],
                inout(reg32) high[24],
                inout(reg32) high[25],
                inout(reg32) high[26],
                inout(reg32) high[27],
                inout(reg32) high[28],
                inout(reg32) high[29],
                inout(reg32) high[30],
                inout(reg32) high[31],
                one = in(reg32) 1u32,
                a0 = in(reg32) a[0],
                a1 = in(reg32) a[1],
                a2 = in(reg32) a[2],
                a3 = in(reg32) a[3],
                b = in(reg64) b.0,
                options(nostack),
        )
    };
}

wgmma_one_array!(
    /// As [`wgmma_m64n128k16_bf16`], B 16×64 (one atom), `acc` this lane's 32 f32 of the 64×64
    /// product (`wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16`, B transposed).
    wgmma_m64n64k16_bf16,
    n64,
    "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16",
    descriptor,
    "1, 1, 0, 1"
);

wgmma_one_array!(
    /// `acc += A·B` for the warpgroup with A MN-major: A 64×16 bf16 given as rows of k, 64 of its
    /// rows side by side in one atom (descriptor `a`, laid out as [`wgmma_m64n128k16_bf16`]'s B),
    /// B 16×16 bf16 K-major (descriptor `b`, laid out as that instruction's A); `acc` this lane's
    /// 8 f32 of the 64×16 product (`wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16`, A
    /// transposed). With a row-major B as A and a row-major A as B, the product is a 64-column
    /// strip of Cᵀ: decoding's few rows of A as the instruction's narrow N. Asynchronous, as
    /// [`wgmma_m64n128k16_bf16`].
    wgmma_m64n16k16_bf16_transposed_a,
    n16,
    "wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16",
    descriptor,
    "1, 1, 1, 0"
);

wgmma_one_array!(
    /// As [`wgmma_m64n128k16_bf16_registers`], B 16×64 (one atom), `acc` this lane's 32 f32 of the
    /// 64×64 product.
    wgmma_m64n64k16_bf16_registers,
    n64,
    "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16",
    registers,
    "1, 1, 1"
);

wgmma_one_array!(
    /// `acc += A·Bᵀ` for the warpgroup with both operands K-major: A 64×16 bf16 (descriptor `a`),
    /// B given as its 64×16 transpose, rows of k (descriptor `b`); `acc` this lane's 32 f32 of the
    /// 64×64 product (`wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16`, neither
    /// transposed). Asynchronous, as [`wgmma_m64n128k16_bf16`].
    wgmma_m64n64k16_bf16_k_major,
    n64,
    "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16",
    descriptor,
    "1, 1, 0, 0"
);

wgmma_one_array!(
    /// `acc += A·B` for the warpgroup with both operands MN-major: A 64×16 bf16 given as 16 rows of
    /// k, its 64 rows side by side in one atom (descriptor `a`), B 16×64 bf16 as rows of k (one
    /// atom, descriptor `b`); `acc` this lane's 32 f32 of the 64×64 product
    /// (`wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16`, both transposed). Asynchronous, as
    /// [`wgmma_m64n128k16_bf16`].
    wgmma_m64n64k16_bf16_mn_major,
    n64,
    "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16",
    descriptor,
    "1, 1, 1, 1"
);

wgmma_m64n256!(
    /// `acc += A·B` for the warpgroup in FP8: A 64×32 e4m3 (K-major, descriptor `a`), B 32×256
    /// e4m3 given as its 256×32 transpose, rows of k (K-major, descriptor `b`: FP8's B has no
    /// transpose, as TF32's); `low` and `high` this lane's f32 of columns 0–127 and 128–255
    /// (`wgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e4m3`). A 128-byte swizzled row holds
    /// 128 of k, so a row's step of 32 is 32 bytes, as bf16's 16. Asynchronous, as
    /// [`wgmma_m64n256k16_bf16`].
    wgmma_m64n256k32_e4m3,
    "wgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e4m3",
    descriptor,
    "1, 1"
);

wgmma_one_array!(
    /// As [`wgmma_m64n256k32_e4m3`] with B 32×128 (its 128×32 transpose by descriptor `b`),
    /// `acc` this lane's 64 f32 of the 64×128 product.
    wgmma_m64n128k32_e4m3,
    n128,
    "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3",
    descriptor,
    "1, 1"
);

wgmma_one_array!(
    /// As [`wgmma_m64n256k32_e4m3`] with B 32×64 (its 64×32 transpose by descriptor `b`), `acc`
    /// this lane's 32 f32 of the 64×64 product.
    wgmma_m64n64k32_e4m3,
    n64,
    "wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3",
    descriptor,
    "1, 1"
);

wgmma_one_array!(
    /// As [`wgmma_m64n256k32_e4m3`] with B 32×16 (its 16×32 transpose by descriptor `b`), `acc`
    /// this lane's 8 f32 of the 64×16 product. With Bᵀ's rows as A and A's rows as B, the product
    /// is a 64-column strip of Cᵀ: decoding's few rows of A as the instruction's narrow N.
    wgmma_m64n16k32_e4m3,
    n16,
    "wgmma.mma_async.sync.aligned.m64n16k32.f32.e4m3.e4m3",
    descriptor,
    "1, 1"
);

/// `setmaxnreg.inc.sync.aligned.u32 N`: this warpgroup's threads may use up to `N` registers
/// from here on, taken from what other warpgroups gave back with [`registers_release`] (the
/// block's total stays within what it was launched with). Every warp of the warpgroup executes it.
#[inline(always)]
pub fn registers_claim<const N: u32>() {
    // SAFETY: no operands; every lane of the warpgroup calls it, with the block's total in bounds.
    unsafe { asm!("setmaxnreg.inc.sync.aligned.u32 {n};", n = const N, options(nostack)) };
}

/// `setmaxnreg.dec.sync.aligned.u32 N`: this warpgroup's threads keep at most `N` registers
/// from here on; the rest go back to the block's pool for [`registers_claim`].
#[inline(always)]
pub fn registers_release<const N: u32>() {
    // SAFETY: as for `registers_claim`.
    unsafe { asm!("setmaxnreg.dec.sync.aligned.u32 {n};", n = const N, options(nostack)) };
}

/// [`wgmma_wait`] that keeps `registers` (the A registers of a `wgmma` still in flight) alive up
/// to the wait. The compiler sees a `wgmma`'s register operands consumed at the issue and would
/// give their registers to new values computed before the wait, which the tensor cores may still
/// be reading; ptxas, seeing that, serialises the `wgmma`s (its note C7513). Naming them here
/// keeps the next values in other registers.
#[inline(always)]
pub fn wgmma_wait_reading<const N: u32>(registers: &[[u32; 4]; 8]) {
    // SAFETY: no effect on the registers (they appear in a comment only); every lane of the
    // warpgroup calls it.
    unsafe {
        asm!(
            "wgmma.wait_group.sync.aligned {n}; // reads {r0} {r1} {r2} {r3} {r4} {r5} {r6} {r7} {r8} {r9} {r10} {r11} {r12} {r13} {r14} {r15} {r16} {r17} {r18} {r19} {r20} {r21} {r22} {r23} {r24} {r25} {r26} {r27} {r28} {r29} {r30} {r31}",
            n = const N,
            r0 = in(reg32) registers[0][0],
            r1 = in(reg32) registers[0][1],
            r2 = in(reg32) registers[0][2],
            r3 = in(reg32) registers[0][3],
            r4 = in(reg32) registers[1][0],
            r5 = in(reg32) registers[1][1],
            r6 = in(reg32) registers[1][2],
            r7 = in(reg32) registers[1][3],
            r8 = in(reg32) registers[2][0],
            r9 = in(reg32) registers[2][1],
            r10 = in(reg32) registers[2][2],
            r11 = in(reg32) registers[2][3],
            r12 = in(reg32) registers[3][0],
            r13 = in(reg32) registers[3][1],
            r14 = in(reg32) registers[3][2],
            r15 = in(reg32) registers[3][3],
            r16 = in(reg32) registers[4][0],
            r17 = in(reg32) registers[4][1],
            r18 = in(reg32) registers[4][2],
            r19 = in(reg32) registers[4][3],
            r20 = in(reg32) registers[5][0],
            r21 = in(reg32) registers[5][1],
            r22 = in(reg32) registers[5][2],
            r23 = in(reg32) registers[5][3],
            r24 = in(reg32) registers[6][0],
            r25 = in(reg32) registers[6][1],
            r26 = in(reg32) registers[6][2],
            r27 = in(reg32) registers[6][3],
            r28 = in(reg32) registers[7][0],
            r29 = in(reg32) registers[7][1],
            r30 = in(reg32) registers[7][2],
            r31 = in(reg32) registers[7][3],
            options(nostack),
        )
    };
}

/// `bar.sync id, threads`: waits at named barrier `id` (1 to 15: 0 is `sync_threads`'s) until
/// `threads` threads (a multiple of 32) have arrived, this warp's among them. With
/// [`barrier_arrive`], two warpgroups take turns: each waits at its own barrier for the other's
/// arrival.
#[inline(always)]
pub fn barrier_sync<const ID: u32, const THREADS: u32>() {
    // SAFETY: a barrier over `THREADS` threads the caller's schedule arrives with; every lane of
    // the warp executes it.
    unsafe { asm!("bar.sync {id}, {n};", id = const ID, n = const THREADS, options(nostack)) };
}

/// `bar.arrive id, threads`: counts this warp at named barrier `id` without waiting.
#[inline(always)]
pub fn barrier_arrive<const ID: u32, const THREADS: u32>() {
    // SAFETY: as for `barrier_sync`.
    unsafe { asm!("bar.arrive {id}, {n};", id = const ID, n = const THREADS, options(nostack)) };
}
