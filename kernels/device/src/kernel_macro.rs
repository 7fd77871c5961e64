//! `kernel!`: one kernel body, two forms; generic kernels and their instances; launch bounds.

/// Defines a kernel once for both targets.
///
/// ```
/// use ptxkit::device::{block_dim, block_idx, thread_idx};
/// use ptxkit::{Dim3, LaunchShape, kernel};
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
/// Parameters are typed views of global memory ([`GlobalSlice`](crate::device::GlobalSlice) and
/// the others) and what [`Param`](crate::Param) allows: pointers, 4- and 8-byte numbers, and
/// `#[repr(C)]` structs of them that implement it, passed by value. On nvptx64 a view is two PTX
/// parameters, its pointer and its extents ([`KernelParam`](crate::KernelParam)).
///
/// **Launch bounds**, CUDA's `__launch_bounds__`: `#[launch_bounds(block, blocks_per_sm)]` among
/// the attributes asks ptxas to fit `blocks_per_sm` blocks of `block` (a [`Dim3`](crate::Dim3))
/// on an SM, capping registers to get there; the PTX builder writes them as `.maxntid` and
/// `.minnctapersm`. A [`Kernel`](crate::Kernel) of this function must launch exactly that block.
/// `#[launch_bounds(block, blocks_per_sm, cluster = n)]` launches the blocks in clusters of `n`
/// along x (`.reqnctapercluster`, CUDA's `__cluster_dims__`; sm_90).
///
/// **Generic kernels** take type and const parameters; their instances, listed once beside the
/// kernel, are the entries (each instance's name is its entry), and the emulator runs every one.
/// Each generic argument is one token: a name, a literal, or a group (`(Foo<u8>)`, `{ 2 * N }`);
/// bounds on type parameters are paths joined by `+`. An instance may have launch bounds of its
/// own (written first), which can use the kernel's parameters:
///
/// ```
/// use ptxkit::device::{block_dim, block_idx, thread_idx};
/// use ptxkit::{Dim3, LaunchShape, kernel};
///
/// /// What the kernel multiplies.
/// pub trait Scaled: Copy {
///     fn times(self, factor: u32) -> Self;
/// }
/// impl Scaled for f32 {
///     fn times(self, factor: u32) -> Self { self * factor as f32 }
/// }
/// impl Scaled for f64 {
///     fn times(self, factor: u32) -> Self { self * factor as f64 }
/// }
///
/// kernel! {
///     /// out[i] = x[i] · FACTOR
///     pub unsafe fn scale<T: Scaled, const FACTOR: u32>(x: *const T, out: *mut T, n: u32) {
///         let i = block_idx().x * block_dim().x + thread_idx().x;
///         if i < n {
///             unsafe { *out.add(i as usize) = (*x.add(i as usize)).times(FACTOR) };
///         }
///     }
///     instances {
///         /// f32, doubled.
///         pub scale_f32_by_2 = <f32, 2>;
///         #[launch_bounds(Dim3::x(64), 8)]
///         pub scale_f64_by_3 = <f64, 3>;
///     }
/// }
///
/// fn main() {
///     assert_eq!(scale_f64_by_3.entry(), "scale_f64_by_3");
///     assert_eq!(scale_f64_by_3.bounds().blocks(), Some(8));
///     let (x, mut out) = ([1.0f64, 2.0], [f64::NAN; 2]);
///     let launch = LaunchShape { grid: Dim3::x(1), block: Dim3::x(2), shared_bytes: 0 };
///     unsafe { scale_f64_by_3.emulate(&launch, (x.as_ptr(), out.as_mut_ptr(), 2)) }.unwrap();
///     assert_eq!(out, [3.0, 6.0]);
/// }
/// ```
///
/// A generic kernel is written at module level (not inside a function): its instances' parameter
/// lists are named through a module of the kernel's name beside it.
///
/// Safety, on both targets: as in CUDA, the pointers must be valid for every element the launch
/// touches, for the whole launch, and threads must not race on what they write.
#[macro_export]
#[allow_internal_unstable(abi_ptx)]
macro_rules! kernel {
    // Sorts `#[launch_bounds(..)]` from the other attributes.
    (@attrs $flags:tt [$($keep:tt)*] [$($bounds:tt)*] #[launch_bounds($($b:tt)*)] $($rest:tt)*) => {
        $crate::kernel!(@attrs $flags [$($keep)*] [$($b)*] $($rest)*);
    };
    (@attrs $flags:tt [$($keep:tt)*] [$($bounds:tt)*] #[$($attr:tt)*] $($rest:tt)*) => {
        $crate::kernel!(@attrs $flags [$($keep)* #[$($attr)*]] [$($bounds)*] $($rest)*);
    };
    // A generic kernel: its parameters, one at a time, into `[kind name type?]` and declarations.
    (@attrs $flags:tt $keep:tt $bounds:tt $vis:vis unsafe fn $name:ident < $($rest:tt)*) => {
        $crate::kernel!(@generics $flags $keep $bounds $vis $name [] [] $($rest)*);
    };
    // A kernel without generic parameters. Its parameter list travels twice: parsed, and as
    // written (`$raw`, for the PTX entry, which looks at how each type is spelled).
    (@attrs $flags:tt [$($keep:tt)*] $bounds:tt $vis:vis unsafe fn $name:ident $raw:tt $body:block) => {
        $crate::kernel!(@plain $flags [$($keep)*] $bounds $vis $name $raw $raw $body);
    };
    (@plain $flags:tt $keep:tt $bounds:tt $vis:vis $name:ident
        ($($arg:ident : $ty:ty),* $(,)?) $raw:tt $body:block
    ) => {
        $crate::kernel!(@define $flags $keep $bounds $vis $name [] ($($arg : $ty),*) [($($ty,)*)] $raw $body);
    };
    (@generics $flags:tt $keep:tt $bounds:tt $vis:vis $name:ident [$($params:tt)*] [$($decl:tt)*]
        const $p:ident : $t:ty , $($rest:tt)*
    ) => {
        $crate::kernel!(@generics $flags $keep $bounds $vis $name [$($params)* [const $p $t]] [$($decl)* const $p: $t,] $($rest)*);
    };
    (@generics $flags:tt $keep:tt $bounds:tt $vis:vis $name:ident [$($params:tt)*] [$($decl:tt)*]
        const $p:ident : $t:ty > $($rest:tt)*
    ) => {
        $crate::kernel!(@generic $flags $keep $bounds $vis $name [$($params)* [const $p $t]] [$($decl)* const $p: $t,] $($rest)*);
    };
    (@generics $flags:tt $keep:tt $bounds:tt $vis:vis $name:ident [$($params:tt)*] [$($decl:tt)*]
        $p:ident $(: $($b1:ident)::+ $(<$($a1:ident = $t1:ty),*>)? $(+ $($b2:ident)::+ $(<$($a2:ident = $t2:ty),*>)?)*)? , $($rest:tt)*
    ) => {
        $crate::kernel!(@generics $flags $keep $bounds $vis $name [$($params)* [type $p]]
            [$($decl)* $p $(: $($b1)::+ $(<$($a1 = $t1),*>)? $(+ $($b2)::+ $(<$($a2 = $t2),*>)?)*)?,] $($rest)*);
    };
    (@generics $flags:tt $keep:tt $bounds:tt $vis:vis $name:ident [$($params:tt)*] [$($decl:tt)*]
        $p:ident $(: $($b1:ident)::+ $(<$($a1:ident = $t1:ty),*>)? $(+ $($b2:ident)::+ $(<$($a2:ident = $t2:ty),*>)?)*)? > $($rest:tt)*
    ) => {
        $crate::kernel!(@generic $flags $keep $bounds $vis $name [$($params)* [type $p]]
            [$($decl)* $p $(: $($b1)::+ $(<$($a1 = $t1),*>)? $(+ $($b2)::+ $(<$($a2 = $t2),*>)?)*)?,] $($rest)*);
    };
    // The generic body, a type naming its parameter list for each instance, then the instances.
    (@generic $flags:tt $keep:tt $bounds:tt $vis:vis $name:ident $params:tt $decl:tt
        $raw:tt $body:block instances $instances:tt
    ) => {
        $crate::kernel!(@generic_body $flags $keep $bounds $vis $name $params $decl $raw $raw $body instances $instances);
    };
    (@generic_body $flags:tt [$($keep:tt)*] $bounds:tt $vis:vis $name:ident [$($params:tt)*] [$($decl:tt)*]
        ($($arg:ident : $ty:ty),* $(,)?) $raw:tt $body:block
        instances { $($instances:tt)* }
    ) => {
        $($keep)*
        #[inline(always)]
        #[allow(clippy::too_many_arguments)]
        $vis unsafe fn $name<$($decl)*>($($arg: $ty),*) $body

        /// The parameter lists of the instances of the generic kernel of the same name.
        #[doc(hidden)]
        #[allow(non_snake_case, non_camel_case_types, dead_code, unused_imports)]
        $vis mod $name {
            use super::*;
            pub struct Generics<$($decl)*>(::core::marker::PhantomData<fn() -> ($($crate::kernel!(@phantom $params),)*)>);
            pub trait Params {
                type Args;
            }
            impl<$($decl)*> Params for Generics<$($crate::kernel!(@name $params)),*> {
                type Args = ($($ty,)*);
            }
        }

        $crate::kernel!(@instances $flags $bounds $name [$($params)*] ($($arg : $ty),*) $raw $($instances)*);
    };
    (@phantom [type $p:ident]) => { $p };
    (@phantom [const $p:ident $t:ty]) => { () };
    (@name [type $p:ident]) => { $p };
    (@name [const $p:ident $t:ty]) => { $p };
    (@alias [type $p:ident] $value:tt) => {
        #[allow(non_camel_case_types)]
        type $p = $value;
    };
    (@alias [const $p:ident $t:ty] $value:tt) => {
        #[allow(non_upper_case_globals)]
        const $p: $t = $value;
    };
    (@instances $flags:tt $bounds:tt $name:ident $params:tt $args:tt $raw:tt) => {};
    (@instances $flags:tt $bounds:tt $name:ident $params:tt $args:tt $raw:tt $($rest:tt)+) => {
        $crate::kernel!(@instance $flags $bounds $name $params $args $raw [] [] $($rest)+);
    };
    // An instance's attributes: its own `#[launch_bounds(..)]` apart from the rest.
    (@instance $flags:tt $bounds:tt $name:ident $params:tt $args:tt $raw:tt $keep:tt $own:tt
        #[launch_bounds($($b:tt)*)] $($rest:tt)*
    ) => {
        $crate::kernel!(@instance $flags $bounds $name $params $args $raw $keep [$($b)*] $($rest)*);
    };
    (@instance $flags:tt $bounds:tt $name:ident $params:tt $args:tt $raw:tt [$($keep:tt)*] $own:tt
        #[$($attr:tt)*] $($rest:tt)*
    ) => {
        $crate::kernel!(@instance $flags $bounds $name $params $args $raw [$($keep)* #[$($attr)*]] $own $($rest)*);
    };
    (@instance $flags:tt $bounds:tt $name:ident [$($param:tt)*] ($($arg:ident : $ty:ty),*) $raw:tt [$($keep:tt)*] $own:tt
        $vis:vis $instance:ident = <$($value:tt),* $(,)?> ; $($rest:tt)*
    ) => {
        $crate::kernel!(@define $flags [$($keep)*] $own $vis $instance
            [$($param $value)*] ($($arg : $ty),*) [<$name::Generics<$($value),*> as $name::Params>::Args] $raw
            { unsafe { $name::<$($value),*>($($arg),*) } }
            $bounds);
        $crate::kernel!(@instances $flags $bounds $name [$($param)*] ($($arg : $ty),*) $raw $($rest)*);
    };
    // An instance without bounds of its own takes the kernel's.
    (@define $flags:tt $keep:tt [] $vis:vis $name:ident $aliases:tt $args:tt $args_ty:tt $raw:tt $body:block $bounds:tt) => {
        $crate::kernel!(@define $flags $keep $bounds $vis $name $aliases $args $args_ty $raw $body);
    };
    (@define $flags:tt $keep:tt [$($own:tt)+] $vis:vis $name:ident $aliases:tt $args:tt $args_ty:tt $raw:tt $body:block $bounds:tt) => {
        $crate::kernel!(@define $flags $keep [$($own)+] $vis $name $aliases $args $args_ty $raw $body);
    };
    // One entry: on nvptx64 the PTX entry point (and its launch-bounds record); on the host the
    // emulator's form. `$aliases` name the generic parameters of an instance inside both.
    (@define [$($flags:tt)*] [$($keep:tt)*] [$($bounds:tt)*] $vis:vis $name:ident [$($param:tt $value:tt)*]
        ($($arg:ident : $ty:ty),*) [$args_ty:ty] $raw:tt $body:block
    ) => {
        #[cfg(target_arch = "nvptx64")]
        $($keep)*
        #[allow(non_upper_case_globals)]
        $vis const $name: $crate::KernelFn<$args_ty> = {
            $($crate::kernel!(@alias $param $value);)*
            $crate::kernel!(@entry [$($flags)*] $name $raw $body);
            $crate::kernel!(@record $name [$($bounds)*]);
            $crate::kernel!(@flags [$($flags)*] $crate::KernelFn::new(
                ::core::env!("CARGO_CRATE_NAME"),
                ::core::stringify!($name),
                $crate::kernel!(@bounds [$($bounds)*]),
            ))
        };

        #[cfg(not(target_arch = "nvptx64"))]
        $($keep)*
        #[allow(non_upper_case_globals)]
        $vis const $name: $crate::KernelFn<$args_ty> = {
            $($crate::kernel!(@alias $param $value);)*
            $crate::kernel!(@emulate [$($flags)*] $name ($($arg : $ty),*) $body);
            $crate::kernel!(@flags [$($flags)*] $crate::KernelFn::new(
                ::core::env!("CARGO_CRATE_NAME"),
                ::core::stringify!($name),
                $crate::kernel!(@bounds [$($bounds)*]),
                emulate,
            ))
        };
    };
    // The PTX entry takes each parameter's parts (`KernelParam`): a view's pointer and extents as
    // two PTX parameters, anything else as itself. A raw pointer or a primitive is written into
    // the entry's parameters as it is, so that a kernel without views compiles as if there were
    // none; any other type is taken as its parts, with a name for its tail from an expansion of
    // its own (`tail`: hygiene keeps them apart), and joined again before the body.
    (@entry $flags:tt $name:ident ($($raw:tt)*) $body:block) => {
        $crate::kernel!(@parts $flags $name [] [] ($($raw)*) $body);
    };
    // The primitives here are the `Param` impls' (params.rs).
    (@parts $flags:tt $name:ident [$($params:tt)*] $joins:tt
        ($arg:ident : *const $t:ty $(, $($rest:tt)*)?) $body:block
    ) => {
        $crate::kernel!(@parts $flags $name [$($params)* $arg: *const $t,] $joins ($($($rest)*)?) $body);
    };
    (@parts $flags:tt $name:ident [$($params:tt)*] $joins:tt
        ($arg:ident : *mut $t:ty $(, $($rest:tt)*)?) $body:block
    ) => {
        $crate::kernel!(@parts $flags $name [$($params)* $arg: *mut $t,] $joins ($($($rest)*)?) $body);
    };
    (@parts $flags:tt $name:ident [$($params:tt)*] $joins:tt
        ($arg:ident : $prim:ident $(, $($rest:tt)*)?) $body:block
    ) => {
        $crate::kernel!(@primitive $prim
            [$crate::kernel!(@parts $flags $name [$($params)* $arg: $prim,] $joins ($($($rest)*)?) $body);]
            [$crate::kernel!(@joined $flags $name [$($params)*] $joins ($arg : $prim $(, $($rest)*)?) $body);]
        );
    };
    (@parts $flags:tt $name:ident $params:tt $joins:tt ($arg:ident : $ty:ty $(, $($rest:tt)*)?) $body:block) => {
        $crate::kernel!(@joined $flags $name $params $joins ($arg : $ty $(, $($rest)*)?) $body);
    };
    (@joined $flags:tt $name:ident [$($params:tt)*] [$($joins:tt)*]
        ($arg:ident : $ty:ty $(, $($rest:tt)*)?) $body:block
    ) => {
        $crate::kernel!(@parts $flags $name
            [$($params)* $arg: <$ty as $crate::KernelParam>::Head, tail: <$ty as $crate::KernelParam>::Tail,]
            [$($joins)* let $arg = <$ty as $crate::KernelParam>::join($arg, tail);]
            ($($($rest)*)?) $body);
    };
    (@primitive u32 [$($yes:tt)*] $no:tt) => { $($yes)* };
    (@primitive u64 [$($yes:tt)*] $no:tt) => { $($yes)* };
    (@primitive i32 [$($yes:tt)*] $no:tt) => { $($yes)* };
    (@primitive i64 [$($yes:tt)*] $no:tt) => { $($yes)* };
    (@primitive f32 [$($yes:tt)*] $no:tt) => { $($yes)* };
    (@primitive f64 [$($yes:tt)*] $no:tt) => { $($yes)* };
    (@primitive $other:ident $yes:tt [$($no:tt)*]) => { $($no)* };
    (@parts [] $name:ident [$($params:tt)*] [$($joins:tt)*] () $body:block) => {
        // Inside the const's block the function's name does not clash with the const's; the
        // PTX entry keeps it.
        #[unsafe(no_mangle)]
        #[allow(clippy::too_many_arguments, improper_ctypes_definitions)]
        unsafe extern "ptx-kernel" fn $name($($params)*) {
            $($joins)*
            $body
        }
    };
    (@parts [sm90a] $name:ident [$($params:tt)*] [$($joins:tt)*] () $body:block) => {
        #[cfg(target_feature = "sm_90a")]
        #[unsafe(no_mangle)]
        #[allow(clippy::too_many_arguments, improper_ctypes_definitions)]
        unsafe extern "ptx-kernel" fn $name($($params)*) {
            $($joins)*
            $body
        }
        #[cfg(not(target_feature = "sm_90a"))]
        #[unsafe(no_mangle)]
        #[allow(clippy::too_many_arguments, improper_ctypes_definitions, unused_variables)]
        unsafe extern "ptx-kernel" fn $name($($params)*) {
            $crate::device::trap()
        }
    };
    (@emulate [] $name:ident ($($arg:ident : $ty:ty),*) $body:block) => {
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
            // The views among the parameters, by name, for the emulator's checks.
            let views = [$((::core::stringify!($arg), $crate::KernelParam::global_region(&$arg))),*];
            let args = Args { $($arg),* };
            // SAFETY: forwarded from this function's contract.
            $crate::emu::launch_with_views(::core::stringify!($name), launch, &views, move || unsafe { args.run() })
        }
    };
    (@emulate [sm90a] $name:ident ($($arg:ident : $ty:ty),*) $body:block) => {
        unsafe fn emulate(
            _launch: &$crate::LaunchShape,
            _args: ($($ty,)*),
        ) -> ::core::result::Result<(), $crate::emu::EmuError> {
            ::core::result::Result::Err($crate::emu::EmuError::InvalidLaunch {
                kernel: ::core::stringify!($name),
                reason: "it uses Hopper's sm_90a instructions (wgmma), which the emulator does not model: it runs on an sm_90 GPU only".into(),
            })
        }
    };
    (@record $name:ident []) => {};
    (@record $name:ident [$($bounds:tt)+]) => {
        // Read by the PTX builder, which writes it onto the entry and drops it.
        #[used]
        #[unsafe(export_name = ::core::concat!("__ptxkit_launch_bounds_", ::core::stringify!($name)))]
        static LAUNCH_BOUNDS: [u32; 5] = $crate::kernel!(@bounds [$($bounds)+]).record();
    };
    (@bounds []) => { $crate::LaunchBounds::NONE };
    (@bounds [$block:expr, $blocks_per_sm:expr, cluster = $ctas:expr $(,)?]) => {
        $crate::LaunchBounds::new($block, $blocks_per_sm).clustered($ctas)
    };
    (@bounds [$block:expr, $blocks_per_sm:expr $(,)?]) => { $crate::LaunchBounds::new($block, $blocks_per_sm) };
    (@flags [] $kernel:expr) => { $kernel };
    (@flags [sm90a] $kernel:expr) => { $kernel.sm90a() };
    // A kernel the rules above cannot read (an internal form that matched none of them).
    (@$form:ident $($rest:tt)*) => {
        ::core::compile_error!(::core::concat!(
            "kernel!: cannot read this kernel (at the step `", ::core::stringify!($form),
            "`): write `unsafe fn name<generics>(parameter: Type, ...) { body }`, a generic kernel followed by `instances { name = <arguments>; ... }`"
        ));
    };
    // The entry point: attributes first.
    ($($tokens:tt)*) => {
        $crate::kernel!(@attrs [] [] [] $($tokens)*);
    };
}

/// As [`kernel!`], for a kernel that uses Hopper's architecture-specific instructions (`wgmma`),
/// which only the sm_90a PTX has: the body is compiled there alone. The other PTX modules get an
/// entry of the same name that traps, so every module lists every kernel; the host launches it
/// only from an sm_90a module ([`KernelFn::sm90a_only`](crate::KernelFn::sm90a_only)), and the
/// emulator refuses it with that reason.
#[macro_export]
macro_rules! kernel_sm90a {
    ($($tokens:tt)*) => {
        $crate::kernel!(@attrs [sm90a] [] [] $($tokens)*);
    };
}
