//! Element-wise loops compiled for the CPU's widest vectors, chosen at run time.
//!
//! The crate is built for baseline x86-64, so the loops the compiler vectorises (GELU, softmax,
//! layer norm, int8 quantisation) ran on 4-lane SSE while the matrix kernels (gemm's, and
//! `int8.rs`) dispatch to AVX-512 at run time: with the int8 products, those loops became the
//! largest part of an embedding batch (perf, docs/results/performance.md). [`wide!`] compiles a
//! function's body twice, once as is and once with AVX-512 enabled, and picks at run time.
//! Rust does not contract `a * b + c` into an FMA, so both copies give the same bits.

/// Whether the AVX-512 copies may run here (checked once by std, then a load).
#[inline]
pub(crate) fn avx512() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512vl")
            && std::arch::is_x86_feature_detected!("avx512dq")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// `wide! { fn name(args) -> ret { body } }` defines `name`, which runs `body` compiled with
/// AVX-512 where the CPU has it and as built otherwise. The body must be safe code; helpers it
/// calls should be `#[inline(always)]` so that they are compiled into the wide copy too.
macro_rules! wide {
    ($(#[$m:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)? $body:block) => {
        $(#[$m])*
        $vis fn $name($($arg: $ty),*) $(-> $ret)? {
            #[inline(always)]
            fn body($($arg: $ty),*) $(-> $ret)? $body
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq")]
                fn wide($($arg: $ty),*) $(-> $ret)? {
                    body($($arg),*)
                }
                if $crate::wide::avx512() {
                    // SAFETY: the CPU has the features `wide` is compiled for (checked just
                    // above); the body itself is safe code.
                    #[allow(unsafe_code)]
                    return unsafe { wide($($arg),*) };
                }
            }
            body($($arg),*)
        }
    };
}
pub(crate) use wide;

#[cfg(test)]
mod tests {
    wide! {
        fn scaled_sum(x: &[f32], k: f32) -> f32 {
            x.iter().map(|v| v * k).sum()
        }
    }

    #[test]
    fn both_copies_agree() {
        let x: Vec<f32> = (0..1000).map(|i| i as f32 * 0.37).collect();
        let plain: f32 = x.iter().map(|v| v * 1.5).sum();
        assert_eq!(scaled_sum(&x, 1.5), plain);
    }
}
