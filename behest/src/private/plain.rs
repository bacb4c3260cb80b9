//! Which argument types take the text route: those whose `Deserialize`
//! from JSON accepts exactly the values their schema accepts, nothing
//! constrained beyond the JSON type and the range of an integer (which
//! `bound_integers` writes into the schema).
//!
//! Generated code asks with "autoref specialization" on a tuple of all of a
//! tool's argument types: `(&Probe::<(A, B)>::new()).__behest_plain()`.

use std::marker::PhantomData;

/// An argument type of the text route.
pub trait Plain {}

macro_rules! plain {
    ($($ty:ty),*) => { $(impl Plain for $ty {})* };
}
plain!(bool, i8, i16, i32, i64, isize, u8, u16, u32, u64, usize, f32, f64, String);
impl<T: Plain> Plain for Option<T> {}
impl<T: Plain> Plain for Vec<T> {}

/// All argument types of a tool, as a tuple, are [`Plain`].
pub trait AllPlain {}

macro_rules! all_plain {
    ($($name:ident)*) => { impl<$($name: Plain),*> AllPlain for ($($name,)*) {} };
}
all_plain!();
all_plain!(A);
all_plain!(A B);
all_plain!(A B C);
all_plain!(A B C D);
all_plain!(A B C D E);
all_plain!(A B C D E F);
all_plain!(A B C D E F G);
all_plain!(A B C D E F G H);
all_plain!(A B C D E F G H I);
all_plain!(A B C D E F G H I J);
all_plain!(A B C D E F G H I J K);
all_plain!(A B C D E F G H I J K L);

/// Carries the tuple of a tool's argument types; holds no value.
pub struct Probe<T>(PhantomData<fn() -> T>);

impl<T> Probe<T> {
    /// A probe of `T`.
    #[inline(always)]
    pub fn new() -> Self {
        Self(PhantomData)
    }
}

impl<T> Default for Probe<T> {
    fn default() -> Self {
        Self::new()
    }
}

pub trait IsPlain {
    #[inline(always)]
    fn __behest_plain(&self) -> bool {
        true
    }
}
impl<T: AllPlain> IsPlain for Probe<T> {}

pub trait NotPlain {
    #[inline(always)]
    fn __behest_plain(&self) -> bool {
        false
    }
}
impl<T> NotPlain for &Probe<T> {}

/// Both levels, for one glob import in generated code.
pub mod prelude {
    pub use super::{IsPlain as _, NotPlain as _};
}
