//! `kernel!`: one kernel body, two forms.

/// Defines a kernel once for both targets.
///
/// ```
/// use kernels::device::{block_dim, block_idx, thread_idx};
/// use kernels::{Dim3, LaunchShape, kernel};
///
/// kernel! {
///     /// out[i] = a[i] + b[i]
///     pub unsafe fn add(a: *const f32, b: *const f32, out: *mut f32, n: u32) {
///         let i = block_idx().x * block_dim().x + thread_idx().x;
///         if i < n {
///             unsafe { *out.add(i as usize) = *a.add(i as usize) + *b.add(i as usize) };
///         }
///     }
/// }
///
/// assert_eq!(add.entry(), "add");
/// // On the host, the kernel runs on the emulator:
/// let (a, b, mut out) = ([1.0f32, 2.0, 3.0], [10.0f32, 20.0, 30.0], [f32::NAN; 3]);
/// let launch = LaunchShape { grid: Dim3::x(2), block: Dim3::x(2), shared_bytes: 0 };
/// unsafe { add.emulate(&launch, (a.as_ptr(), b.as_ptr(), out.as_mut_ptr(), 3)) }.unwrap();
/// assert_eq!(out, [11.0, 22.0, 33.0]);
/// ```
///
/// `add` is a [`KernelFn`](crate::KernelFn) whose parameter list is the tuple of the function's
/// parameter types: its entry name is the function's name, written once.
/// * On nvptx64 the function itself becomes `#[no_mangle] extern "ptx-kernel" fn add(a, b, out, n)`,
///   the PTX entry `add`.
/// * On the host, `add.emulate(&launch, (a, b, out, n))` runs the body on the emulator over the grid.
///
/// Safety, on both: as in CUDA, the pointers must be valid for every element the launch touches,
/// for the whole launch, and threads must not race on what they write.
#[macro_export]
macro_rules! kernel {
    (
        $(#[$meta:meta])*
        $vis:vis unsafe fn $name:ident($($arg:ident : $ty:ty),* $(,)?) $body:block
    ) => {
        #[cfg(target_arch = "nvptx64")]
        $(#[$meta])*
        #[allow(non_upper_case_globals)]
        $vis const $name: $crate::KernelFn<($($ty,)*)> = {
            // Inside the const's block the function's name does not clash with the const's; the
            // PTX entry keeps it.
            #[unsafe(no_mangle)]
            unsafe extern "ptx-kernel" fn $name($($arg: $ty),*) $body
            $crate::KernelFn::new(::core::stringify!($name))
        };

        #[cfg(not(target_arch = "nvptx64"))]
        $(#[$meta])*
        #[allow(non_upper_case_globals)]
        $vis const $name: $crate::KernelFn<($($ty,)*)> = {
            /// # Safety
            /// The pointers must be valid for every element the launch touches, as on the GPU.
            #[allow(clippy::too_many_arguments)]
            unsafe fn emulate(
                launch: &$crate::LaunchShape,
                ($($arg,)*): ($($ty,)*),
            ) -> ::core::result::Result<(), $crate::emu::EmuError> {
                #[derive(Clone, Copy)]
                struct Args { $($arg: $ty),* }
                // SAFETY: the caller promises, as for a GPU launch, that the pointers stay valid for
                // the launch and that threads do not race on the memory behind them.
                unsafe impl Sync for Args {}
                impl Args {
                    #[inline(always)]
                    #[allow(unused_unsafe)]
                    unsafe fn run(self) {
                        let Args { $($arg),* } = self;
                        $body
                    }
                }
                let args = Args { $($arg),* };
                // SAFETY: forwarded from this function's contract.
                $crate::emu::launch(::core::stringify!($name), launch, move || unsafe { args.run() })
            }
            $crate::KernelFn::new(::core::stringify!($name), emulate)
        };
    };
}

/// As [`kernel!`], for a kernel that uses Hopper's architecture-specific instructions (`wgmma`),
/// which only the sm_90a PTX has: the body is compiled there alone. The other PTX modules get an
/// entry of the same name that traps, so every module lists every kernel; the host launches it
/// only from an sm_90a module ([`KernelFn::sm90a_only`](crate::KernelFn::sm90a_only)), and the
/// emulator refuses it with that reason.
#[macro_export]
macro_rules! kernel_sm90a {
    (
        $(#[$meta:meta])*
        $vis:vis unsafe fn $name:ident($($arg:ident : $ty:ty),* $(,)?) $body:block
    ) => {
        #[cfg(target_arch = "nvptx64")]
        $(#[$meta])*
        #[allow(non_upper_case_globals)]
        $vis const $name: $crate::KernelFn<($($ty,)*)> = {
            #[cfg(target_feature = "sm_90a")]
            #[unsafe(no_mangle)]
            unsafe extern "ptx-kernel" fn $name($($arg: $ty),*) $body
            #[cfg(not(target_feature = "sm_90a"))]
            #[unsafe(no_mangle)]
            unsafe extern "ptx-kernel" fn $name($($arg: $ty),*) {
                let _ = ($($arg,)*);
                $crate::device::trap()
            }
            $crate::KernelFn::new(::core::stringify!($name)).sm90a()
        };

        #[cfg(not(target_arch = "nvptx64"))]
        $(#[$meta])*
        #[allow(non_upper_case_globals)]
        $vis const $name: $crate::KernelFn<($($ty,)*)> = {
            unsafe fn emulate(
                _launch: &$crate::LaunchShape,
                _args: ($($ty,)*),
            ) -> ::core::result::Result<(), $crate::emu::EmuError> {
                ::core::result::Result::Err($crate::emu::EmuError::InvalidLaunch {
                    kernel: ::core::stringify!($name),
                    reason: "it uses Hopper's sm_90a instructions (wgmma), which the emulator does not model: it runs on an sm_90 GPU only".into(),
                })
            }
            $crate::KernelFn::new(::core::stringify!($name), emulate).sm90a()
        };
    };
}
