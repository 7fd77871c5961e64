//! `printf!` from a kernel: C's format string and arguments, as CUDA's `printf`.
//!
//! On the GPU the arguments are packed as C passes them to a variadic function (`float` promoted
//! to `double`, small integers to `int`) and handed to the device runtime's `vprintf`, which the
//! driver prints when the host next synchronises. On the emulator the same format is written
//! out at once, each line prefixed with the block and thread that printed it, and a format that
//! does not fit its arguments (too few, `%f` for an integer) fails the launch with its line.

use core::ffi::CStr;

/// A value `printf!` takes: what C's default argument promotions make of it.
pub trait PrintfArg: Copy {
    /// The type `vprintf` reads it as.
    type Promoted: Copy;
    fn promote(self) -> Self::Promoted;
    /// The value, for the emulator's formatter.
    #[cfg(not(target_arch = "nvptx64"))]
    #[doc(hidden)]
    fn value(self) -> Value;
}

/// A promoted argument, as the emulator formats it.
#[cfg(not(target_arch = "nvptx64"))]
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    Int(i64),
    Unsigned(u64),
    Float(f64),
    Pointer(usize),
    Text(&'static CStr),
}

macro_rules! promoted {
    ($($t:ty => $p:ty, $kind:ident);* $(;)?) => {$(
        impl PrintfArg for $t {
            type Promoted = $p;
            #[inline(always)]
            fn promote(self) -> $p {
                self as $p
            }
            #[cfg(not(target_arch = "nvptx64"))]
            fn value(self) -> Value {
                Value::$kind(self as _)
            }
        }
    )*};
}
promoted! {
    i8 => i32, Int; i16 => i32, Int; i32 => i32, Int; i64 => i64, Int;
    u8 => u32, Unsigned; u16 => u32, Unsigned; u32 => u32, Unsigned; u64 => u64, Unsigned;
    f32 => f64, Float; f64 => f64, Float;
}

impl PrintfArg for bool {
    type Promoted = i32;
    #[inline(always)]
    fn promote(self) -> i32 {
        self as i32
    }
    #[cfg(not(target_arch = "nvptx64"))]
    fn value(self) -> Value {
        Value::Int(self as i64)
    }
}

impl<T> PrintfArg for *const T {
    type Promoted = *const T;
    #[inline(always)]
    fn promote(self) -> *const T {
        self
    }
    #[cfg(not(target_arch = "nvptx64"))]
    fn value(self) -> Value {
        Value::Pointer(self as usize)
    }
}

impl<T> PrintfArg for *mut T {
    type Promoted = *mut T;
    #[inline(always)]
    fn promote(self) -> *mut T {
        self
    }
    #[cfg(not(target_arch = "nvptx64"))]
    fn value(self) -> Value {
        Value::Pointer(self as usize)
    }
}

/// `%s`: a C string literal (`c"name"`).
impl PrintfArg for &'static CStr {
    type Promoted = *const core::ffi::c_char;
    #[inline(always)]
    fn promote(self) -> *const core::ffi::c_char {
        self.as_ptr()
    }
    #[cfg(not(target_arch = "nvptx64"))]
    fn value(self) -> Value {
        Value::Text(self)
    }
}

/// The promoted arguments laid out as C lays out a struct of them, which is how `vprintf` reads
/// its argument buffer.
macro_rules! argument_lists {
    ($($name:ident($($t:ident),*);)*) => {$(
        #[doc(hidden)]
        #[repr(C)]
        #[derive(Clone, Copy)]
        pub struct $name<$($t),*>($(pub $t),*);
    )*};
}
argument_lists! {
    Args0();
    Args1(A);
    Args2(A, B);
    Args3(A, B, C);
    Args4(A, B, C, D);
    Args5(A, B, C, D, E);
    Args6(A, B, C, D, E, F);
    Args7(A, B, C, D, E, F, G);
    Args8(A, B, C, D, E, F, G, H);
}

/// Hands the format (NUL-terminated) and the argument buffer to the device runtime.
///
/// # Safety
/// `format` ends with a NUL; `args` is an `ArgsN` of promoted arguments that fits the format.
#[cfg(target_arch = "nvptx64")]
#[doc(hidden)]
#[inline(always)]
pub unsafe fn vprintf<A>(format: &str, args: &A) {
    // SAFETY: forwarded from the caller.
    unsafe { super::nvptx::vprintf(format.as_ptr(), (args as *const A).cast()) };
}

/// The emulator's `printf`: `format` filled in with `args`, prefixed with the calling block and
/// thread, printed whole; a format that does not fit the arguments fails the launch.
#[cfg(not(target_arch = "nvptx64"))]
#[doc(hidden)]
#[track_caller]
pub fn emulated(format: &str, args: &[Value]) {
    let current = crate::emu::context::current();
    match format_c(format, args) {
        Ok(text) => {
            let prefix = format!("[block {} thread {}] ", current.block_idx.get(), current.thread_idx);
            let mut lines = String::new();
            for line in text.split_inclusive('\n') {
                lines.push_str(&prefix);
                lines.push_str(line);
            }
            crate::emu::printed(lines);
        }
        Err(why) => crate::emu::context::report(format!(
            "printf at {}: {why}",
            crate::emu::shadow::site(core::panic::Location::caller())
        )),
    }
}

/// `format` filled in with `args` as C's `printf` fills it: conversions `d i u x X o c s p f F e
/// E g G %`, with flags `-+ 0#`, width, precision and the length modifiers `h hh l ll z`.
#[cfg(not(target_arch = "nvptx64"))]
pub fn format_c(format: &str, args: &[Value]) -> Result<String, String> {
    let mut out = String::new();
    let mut args = args.iter().enumerate();
    let mut chars = format.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        if chars.peek() == Some(&'%') {
            chars.next();
            out.push('%');
            continue;
        }
        let mut spec = Spec::default();
        while let Some(&flag) = chars.peek() {
            match flag {
                '-' => spec.left = true,
                '+' => spec.plus = true,
                ' ' => spec.space = true,
                '0' => spec.zero = true,
                '#' => spec.alternate = true,
                _ => break,
            }
            chars.next();
        }
        spec.width = number(&mut chars);
        if chars.peek() == Some(&'.') {
            chars.next();
            spec.precision = Some(number(&mut chars).unwrap_or(0));
        }
        while matches!(chars.peek(), Some('h' | 'l' | 'z' | 'j' | 't' | 'L')) {
            chars.next();
        }
        let Some(conversion) = chars.next() else {
            return Err(format!("the format {format:?} ends inside a conversion"));
        };
        let Some((index, &value)) = args.next() else {
            return Err(format!("the format {format:?} has more conversions than arguments"));
        };
        let text = spec
            .convert(conversion, value)
            .map_err(|why| format!("argument {} of the format {format:?}: {why}", index + 1))?;
        out.push_str(&spec.pad(text, conversion));
    }
    if let Some((index, _)) = args.next() {
        return Err(format!(
            "the format {format:?} has {index} conversions and more arguments than that"
        ));
    }
    Ok(out)
}

#[cfg(not(target_arch = "nvptx64"))]
fn number(chars: &mut core::iter::Peekable<core::str::Chars<'_>>) -> Option<usize> {
    let mut n: Option<usize> = None;
    while let Some(d) = chars.peek().and_then(|c| c.to_digit(10)) {
        n = Some(n.unwrap_or(0).saturating_mul(10).saturating_add(d as usize));
        chars.next();
    }
    n
}

#[cfg(not(target_arch = "nvptx64"))]
#[derive(Default)]
struct Spec {
    left: bool,
    plus: bool,
    space: bool,
    zero: bool,
    alternate: bool,
    width: Option<usize>,
    precision: Option<usize>,
}

#[cfg(not(target_arch = "nvptx64"))]
impl Spec {
    fn convert(&self, conversion: char, value: Value) -> Result<String, String> {
        let integer = |value: Value| match value {
            Value::Int(v) => Ok(v as i128),
            Value::Unsigned(v) => Ok(v as i128),
            other => Err(format!("%{conversion} takes an integer, and got {other:?}")),
        };
        let sign = |negative: bool| {
            if negative {
                "-"
            } else if self.plus {
                "+"
            } else if self.space {
                " "
            } else {
                ""
            }
        };
        Ok(match conversion {
            'd' | 'i' => {
                let v = integer(value)?;
                let digits = self.min_digits(v.unsigned_abs().to_string());
                format!("{}{digits}", sign(v < 0))
            }
            'u' => self.min_digits(unsigned(integer(value)?).to_string()),
            'x' => self.prefixed("0x", self.min_digits(format!("{:x}", unsigned(integer(value)?)))),
            'X' => self.prefixed("0X", self.min_digits(format!("{:X}", unsigned(integer(value)?)))),
            'o' => self.prefixed("0", self.min_digits(format!("{:o}", unsigned(integer(value)?)))),
            'c' => char::from_u32(integer(value)? as u32).map_or_else(String::new, String::from),
            'p' => match value {
                Value::Pointer(p) => format!("0x{p:x}"),
                other => return Err(format!("%p takes a pointer, and got {other:?}")),
            },
            's' => match value {
                Value::Text(text) => {
                    let text = text.to_string_lossy();
                    match self.precision {
                        Some(p) => text.chars().take(p).collect(),
                        None => text.into_owned(),
                    }
                }
                other => return Err(format!("%s takes a C string (c\"...\"), and got {other:?}")),
            },
            'f' | 'F' | 'e' | 'E' | 'g' | 'G' => {
                let Value::Float(v) = value else {
                    return Err(format!("%{conversion} takes a float, and got {value:?}"));
                };
                let body = float(v.abs(), conversion, self.precision.unwrap_or(6), self.alternate);
                format!("{}{body}", sign(v.is_sign_negative() && !v.is_nan()))
            }
            other => return Err(format!("%{other} is not a conversion printf knows")),
        })
    }

    /// An integer's digits with at least `precision` of them.
    fn min_digits(&self, digits: String) -> String {
        match self.precision {
            Some(p) if digits.len() < p => format!("{}{digits}", "0".repeat(p - digits.len())),
            _ => digits,
        }
    }

    fn prefixed(&self, prefix: &str, digits: String) -> String {
        if self.alternate && digits != "0" {
            format!("{prefix}{digits}")
        } else {
            digits
        }
    }

    /// `text` padded to the width: spaces, or zeros after the sign for numbers with `0`.
    fn pad(&self, text: String, conversion: char) -> String {
        let width = self.width.unwrap_or(0);
        let len = text.chars().count();
        if len >= width {
            return text;
        }
        let fill = width - len;
        let numeric = "diuxXofFeEgG".contains(conversion);
        if self.left {
            format!("{text}{}", " ".repeat(fill))
        } else if self.zero && numeric && !(self.precision.is_some() && "diuxXo".contains(conversion)) {
            let split = text
                .find(|c: char| c.is_ascii_digit() || c == 'i' || c == 'n')
                .unwrap_or(0);
            let (sign, digits) = text.split_at(split);
            let (sign, digits) = match digits.strip_prefix("0x").or(digits.strip_prefix("0X")) {
                Some(rest) if self.alternate => (format!("{sign}{}", &digits[..2]), rest.to_string()),
                _ => (sign.to_string(), digits.to_string()),
            };
            format!("{sign}{}{digits}", "0".repeat(fill))
        } else {
            format!("{}{text}", " ".repeat(fill))
        }
    }
}

/// An integer as C reinterprets it for `%u %x %o`: the unsigned value of the same bits (64-bit).
#[cfg(not(target_arch = "nvptx64"))]
fn unsigned(v: i128) -> u64 {
    v as i64 as u64
}

/// A finite or special magnitude in C's `%f %e %g` forms.
#[cfg(not(target_arch = "nvptx64"))]
fn float(v: f64, conversion: char, precision: usize, alternate: bool) -> String {
    let upper = conversion.is_ascii_uppercase();
    let special = if v.is_nan() {
        Some("nan")
    } else if v.is_infinite() {
        Some("inf")
    } else {
        None
    };
    if let Some(word) = special {
        return if upper { word.to_uppercase() } else { word.to_string() };
    }
    let text = match conversion.to_ascii_lowercase() {
        'f' => format!("{v:.precision$}"),
        'e' => exponent(v, precision),
        _ => {
            // %g: %e where the exponent is below -4 or at least the precision, else %f; trailing
            // zeros dropped unless `#`.
            let p = precision.max(1);
            let e = if v == 0.0 { 0 } else { v.log10().floor() as i32 };
            let mut t = if e < -4 || e >= p as i32 {
                exponent(v, p - 1)
            } else {
                format!("{v:.*}", (p as i32 - 1 - e).max(0) as usize)
            };
            if !alternate {
                let (mantissa, tail) = match t.find('e') {
                    Some(i) => (t[..i].to_string(), t[i..].to_string()),
                    None => (t.clone(), String::new()),
                };
                let mantissa = if mantissa.contains('.') {
                    mantissa.trim_end_matches('0').trim_end_matches('.').to_string()
                } else {
                    mantissa
                };
                t = mantissa + &tail;
            }
            t
        }
    };
    if upper { text.to_uppercase() } else { text }
}

/// `d.ddde±XX`, as C writes `%e`.
#[cfg(not(target_arch = "nvptx64"))]
fn exponent(v: f64, precision: usize) -> String {
    let text = format!("{v:.precision$e}");
    let (mantissa, exp) = text.split_once('e').unwrap_or((&text, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    format!("{mantissa}e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs())
}

/// Prints from a kernel, as CUDA's `printf`: `printf!("i = %u, x = %f\n", i, x)`. The format is
/// C's; arguments are numbers, `bool`, raw pointers (`%p`) and C string literals (`%s`, `c"…"`),
/// at most eight. The emulator prefixes each line with `[block (x, y, z) thread (x, y, z)]`.
#[macro_export]
macro_rules! printf {
    ($format:literal $(,)?) => { $crate::printf!(@args $format, Args0,) };
    ($format:literal, $a:expr $(,)?) => { $crate::printf!(@args $format, Args1, $a) };
    ($format:literal, $a:expr, $b:expr $(,)?) => { $crate::printf!(@args $format, Args2, $a, $b) };
    ($format:literal, $a:expr, $b:expr, $c:expr $(,)?) => { $crate::printf!(@args $format, Args3, $a, $b, $c) };
    ($format:literal, $a:expr, $b:expr, $c:expr, $d:expr $(,)?) => {
        $crate::printf!(@args $format, Args4, $a, $b, $c, $d)
    };
    ($format:literal, $a:expr, $b:expr, $c:expr, $d:expr, $e:expr $(,)?) => {
        $crate::printf!(@args $format, Args5, $a, $b, $c, $d, $e)
    };
    ($format:literal, $a:expr, $b:expr, $c:expr, $d:expr, $e:expr, $f:expr $(,)?) => {
        $crate::printf!(@args $format, Args6, $a, $b, $c, $d, $e, $f)
    };
    ($format:literal, $a:expr, $b:expr, $c:expr, $d:expr, $e:expr, $f:expr, $g:expr $(,)?) => {
        $crate::printf!(@args $format, Args7, $a, $b, $c, $d, $e, $f, $g)
    };
    ($format:literal, $a:expr, $b:expr, $c:expr, $d:expr, $e:expr, $f:expr, $g:expr, $h:expr $(,)?) => {
        $crate::printf!(@args $format, Args8, $a, $b, $c, $d, $e, $f, $g, $h)
    };
    (@args $format:literal, $list:ident, $($arg:expr),*) => {{
        #[cfg(target_arch = "nvptx64")]
        {
            let args = $crate::device::print::$list($($crate::device::print::PrintfArg::promote($arg)),*);
            // SAFETY: the format ends with the NUL added here, and the arguments are packed as
            // vprintf reads them.
            unsafe { $crate::device::print::vprintf(::core::concat!($format, "\0"), &args) };
        }
        #[cfg(not(target_arch = "nvptx64"))]
        $crate::device::print::emulated($format, &[$($crate::device::print::PrintfArg::value($arg)),*]);
    }};
}

#[cfg(all(test, not(target_arch = "nvptx64")))]
mod tests {
    use super::*;

    fn c(format: &str, args: &[Value]) -> String {
        format_c(format, args).unwrap()
    }

    #[test]
    fn integers_floats_and_text_are_written_as_c_writes_them() {
        use Value::*;
        assert_eq!(
            c("%d|%5d|%-5d|%05d|%+d", &[Int(-42), Int(42), Int(42), Int(-42), Int(7)]),
            "-42|   42|42   |-0042|+7"
        );
        assert_eq!(
            c(
                "%u %x %X %#x %o %.3d",
                &[
                    Unsigned(7),
                    Unsigned(255),
                    Unsigned(255),
                    Unsigned(255),
                    Unsigned(8),
                    Int(5)
                ]
            ),
            "7 ff FF 0xff 10 005"
        );
        assert_eq!(c("%u", &[Int(-1)]), "18446744073709551615");
        assert_eq!(
            c(
                "%f %.2f %8.3f %e %g %g %g",
                &[
                    Float(1.5),
                    Float(-2.345),
                    Float(1.23456),
                    Float(12345.678),
                    Float(0.0001),
                    Float(1e-5),
                    Float(100.0)
                ]
            ),
            "1.500000 -2.35    1.235 1.234568e+04 0.0001 1e-05 100"
        );
        assert_eq!(
            c(
                "%f %F %f",
                &[Float(f64::NAN), Float(f64::INFINITY), Float(-f64::INFINITY)]
            ),
            "nan INF -inf"
        );
        assert_eq!(c("%s=%c 100%%", &[Text(c"x"), Int(65)]), "x=A 100%");
        assert_eq!(c("%lu %lld %zu", &[Unsigned(1), Int(-2), Unsigned(3)]), "1 -2 3");
    }

    #[test]
    fn a_format_that_does_not_fit_its_arguments_is_refused() {
        use Value::*;
        assert!(format_c("%d %d", &[Int(1)]).unwrap_err().contains("more conversions"));
        assert!(
            format_c("%d", &[Int(1), Int(2)])
                .unwrap_err()
                .contains("more arguments")
        );
        assert!(format_c("%f", &[Unsigned(1)]).unwrap_err().contains("takes a float"));
        assert!(format_c("%d", &[Float(1.0)]).unwrap_err().contains("takes an integer"));
        assert!(format_c("%q", &[Int(1)]).unwrap_err().contains("not a conversion"));
    }
}
