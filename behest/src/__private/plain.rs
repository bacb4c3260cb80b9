//! Which argument types take the text route: those whose `Deserialize`
//! from JSON accepts exactly the values their schema accepts, nothing
//! constrained beyond the JSON type and the range of an integer (which
//! `bound_integers` writes into the schema).
//!
//! Generated code asks through `dispatch` on a tuple of all of a tool's
//! argument types: `(&Probe::<(A, B)>::new()).__behest_plain()`.

/// An argument type of the text route.
pub trait Plain {
    /// How many levels of arrays a value of the type nests.
    const DEPTH: usize;
    /// Whether a value of the type holds floating-point numbers, which
    /// read a negative zero differently on the two routes (no default: a
    /// new impl must say).
    const FLOATS: bool;
}

macro_rules! plain {
    ($($ty:ty),*) => {
        $(impl Plain for $ty {
            const DEPTH: usize = 0;
            const FLOATS: bool = false;
        })*
    };
}
plain!(bool, i8, i16, i32, i64, isize, u8, u16, u32, u64, usize, String);
impl Plain for f32 {
    const DEPTH: usize = 0;
    const FLOATS: bool = true;
}
impl Plain for f64 {
    const DEPTH: usize = 0;
    const FLOATS: bool = true;
}
impl<T: Plain> Plain for Option<T> {
    const DEPTH: usize = T::DEPTH;
    const FLOATS: bool = T::FLOATS;
}
impl<T: Plain> Plain for Vec<T> {
    const DEPTH: usize = 1 + T::DEPTH;
    const FLOATS: bool = T::FLOATS;
}

pub use crate::tool::PlainArguments;

/// All argument types of a tool, as a tuple, are [`Plain`].
pub trait AllPlain {
    /// The deepest nesting of an arguments object of these types, the
    /// object itself being level 1 (as `Limits::max_argument_depth` counts).
    const DEPTH: usize;
    /// Whether some argument type holds floating-point numbers.
    const FLOATS: bool;
}

const fn max(a: usize, b: usize) -> usize {
    if a > b {
        a
    } else {
        b
    }
}

macro_rules! all_plain {
    ($($name:ident)*) => {
        impl<$($name: Plain),*> AllPlain for ($($name,)*) {
            const DEPTH: usize = 1 + max_of(&[$(<$name as Plain>::DEPTH),*]);
            const FLOATS: bool = false $(|| <$name as Plain>::FLOATS)*;
        }
    };
}

/// The largest of `depths`, 0 for none.
const fn max_of(depths: &[usize]) -> usize {
    let mut deepest = 0;
    let mut at = 0;
    while at < depths.len() {
        deepest = max(deepest, depths[at]);
        at += 1;
    }
    deepest
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
