//! [`plant_switch!`](crate::plant_switch): a crate's switch for its planted defects, the one
//! mechanism every recipe crate's negative controls use.

/// Declares, in the invoking crate's `plant` module, the switch for `$plant` (a fieldless
/// enum of that crate's planted defects, `Copy + PartialEq`):
///
/// - with the invoking crate's feature `plant`: `pub fn set(Option<$plant>)` puts one defect
///   back (process-wide; `None` clears it) and `pub(crate) fn active($plant) -> bool` asks;
/// - without it: only `active`, a `const fn` that is always `false`, so a check in production
///   code compiles to nothing.
///
/// The `cfg`s are the invoking crate's: each crate's defects are switched by its own feature.
#[macro_export]
macro_rules! plant_switch {
    ($plant:ty) => {
        #[cfg(feature = "plant")]
        static ACTIVE: ::std::sync::atomic::AtomicU8 = ::std::sync::atomic::AtomicU8::new(0);

        /// `plant`'s code in `ACTIVE` (0: none).
        #[cfg(feature = "plant")]
        fn code(plant: ::std::option::Option<$plant>) -> u8 {
            plant.map_or(0, |plant| plant as u8 + 1)
        }

        /// Puts `plant` back (`None`: no defect).
        #[cfg(feature = "plant")]
        pub fn set(plant: ::std::option::Option<$plant>) {
            ACTIVE.store(code(plant), ::std::sync::atomic::Ordering::SeqCst);
        }

        /// Whether `plant` is the defect put back.
        #[cfg(feature = "plant")]
        pub(crate) fn active(plant: $plant) -> bool {
            ACTIVE.load(::std::sync::atomic::Ordering::Relaxed)
                == code(::std::option::Option::Some(plant))
        }

        /// Whether `plant` is the defect put back: never, without the feature.
        #[cfg(not(feature = "plant"))]
        pub(crate) const fn active(_plant: $plant) -> bool {
            false
        }
    };
}
