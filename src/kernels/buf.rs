//! `AlignedBuf<T>`: a zero-initialised, 64-byte aligned heap buffer for packed weights,
//! activations and per-thread scratch.
//!
//! A plain `Vec<u8>` is only 1-aligned; the P64·G128 records, AMX tile rows and AVX-512 loads
//! want cache-line alignment (kernels.md §1, pitfall 10). This is a thin wrapper over
//! `std::alloc` with `Layout` align 64 and nothing else: no pooling, no custom allocator.
//! Only element types for which the all-zero byte pattern is a valid value ([`Pod`]) are allowed.

use std::alloc::{self, Layout};
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

/// Alignment of every [`AlignedBuf`], in bytes (one cache line).
pub const ALIGN: usize = 64;

mod sealed {
    pub trait Sealed {}
}

/// Plain old data: every bit pattern (in particular all zeros) is a valid value, no drop glue.
///
/// Sealed: implemented only for the primitive types the kernels store.
pub trait Pod: Copy + Send + Sync + 'static + sealed::Sealed {}

macro_rules! pod {
    ($($t:ty),*) => { $( impl sealed::Sealed for $t {} impl Pod for $t {} )* };
}
pod!(u8, i8, u16, i16, u32, i32, f32, f64, super::bf16::Bf16);

/// A fixed-length, zero-initialised, 64-byte aligned buffer of `T`.
pub struct AlignedBuf<T: Pod> {
    ptr: NonNull<T>,
    len: usize,
}

// SAFETY: AlignedBuf owns its allocation exclusively (like Vec<T>); T is Send + Sync.
unsafe impl<T: Pod> Send for AlignedBuf<T> {}
// SAFETY: shared access only hands out &[T]; T is Sync.
unsafe impl<T: Pod> Sync for AlignedBuf<T> {}

impl<T: Pod> AlignedBuf<T> {
    /// A buffer of `len` zeroed elements. Panics only if the size overflows `isize` or the
    /// allocator fails (as `Vec` does).
    pub fn zeroed(len: usize) -> Self {
        let layout = Self::layout(len);
        if layout.size() == 0 {
            // A dangling but 64-aligned pointer: never dereferenced for len 0... unless T is
            // zero-sized, which no Pod type is.
            let ptr = NonNull::new(ALIGN as *mut T).expect("64 is non-null");
            return Self { ptr, len };
        }
        // SAFETY: layout has non-zero size (checked above).
        let raw = unsafe { alloc::alloc_zeroed(layout) };
        let Some(ptr) = NonNull::new(raw.cast::<T>()) else {
            alloc::handle_alloc_error(layout)
        };
        Self { ptr, len }
    }

    /// A buffer holding a copy of `src`.
    pub fn from_slice(src: &[T]) -> Self {
        let mut b = Self::zeroed(src.len());
        b.copy_from_slice(src);
        b
    }

    fn layout(len: usize) -> Layout {
        let bytes = len
            .checked_mul(std::mem::size_of::<T>())
            .expect("AlignedBuf size overflows usize");
        Layout::from_size_align(bytes, ALIGN).expect("AlignedBuf size overflows isize")
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when the buffer holds no element.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Set every element to zero (the all-zero bit pattern).
    pub fn fill_zero(&mut self) {
        // SAFETY: ptr is valid for len elements; all-zero is a valid T (Pod).
        unsafe { std::ptr::write_bytes(self.ptr.as_ptr(), 0, self.len) };
    }

    /// Grow (reallocating, zeroed) when shorter than `len`; never shrinks. Contents are not
    /// preserved across a growth. Returns true when it reallocated.
    pub fn ensure_len(&mut self, len: usize) -> bool {
        if self.len >= len {
            return false;
        }
        *self = Self::zeroed(len);
        true
    }
}

impl<T: Pod> Drop for AlignedBuf<T> {
    fn drop(&mut self) {
        let layout = Self::layout(self.len);
        if layout.size() != 0 {
            // SAFETY: allocated in `zeroed` with exactly this layout.
            unsafe { alloc::dealloc(self.ptr.as_ptr().cast(), layout) };
        }
    }
}

impl<T: Pod> Deref for AlignedBuf<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // SAFETY: ptr is valid, aligned and initialised for len elements (or dangling with len 0).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Pod> DerefMut for AlignedBuf<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as in deref, and &mut self gives exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Pod> Clone for AlignedBuf<T> {
    fn clone(&self) -> Self {
        Self::from_slice(self)
    }
}

impl<T: Pod + std::fmt::Debug> std::fmt::Debug for AlignedBuf<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "AlignedBuf<{}>[{}]",
            std::any::type_name::<T>(),
            self.len
        )
    }
}

/// View a byte slice as `&mut [T]`, taking `n` elements from its 64-aligned front and
/// advancing `bytes` past them (rounded up to 64). Used to carve per-thread scratch.
/// Panics if `bytes` is too short or misaligned (a kernel sizing bug, not user input).
pub fn carve<'a, T: Pod>(bytes: &mut &'a mut [u8], n: usize) -> &'a mut [T] {
    let size = n * std::mem::size_of::<T>();
    let step = size.div_ceil(ALIGN) * ALIGN;
    let taken = std::mem::take(bytes);
    assert!(
        (taken.as_ptr() as usize).is_multiple_of(ALIGN),
        "scratch not 64-aligned"
    );
    assert!(
        taken.len() >= step,
        "scratch too small: {} < {step}",
        taken.len()
    );
    let (head, tail) = taken.split_at_mut(step);
    *bytes = tail;
    // SAFETY: head is 64-aligned (asserted; step keeps alignment), holds at least size bytes,
    // every bit pattern is a valid T (Pod), and the returned slice borrows head exclusively.
    unsafe { std::slice::from_raw_parts_mut(head.as_mut_ptr().cast::<T>(), n) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_and_zeroed() {
        for len in [0usize, 1, 3, 64, 4353] {
            let b = AlignedBuf::<f32>::zeroed(len);
            assert_eq!(b.as_ptr() as usize % ALIGN, 0);
            assert!(b.iter().all(|&x| x == 0.0));
            assert_eq!(b.len(), len);
        }
    }

    #[test]
    fn carve_keeps_alignment() {
        let mut buf = AlignedBuf::<u8>::zeroed(1024);
        let mut rest: &mut [u8] = &mut buf;
        let a: &mut [i32] = carve(&mut rest, 5);
        let b: &mut [f32] = carve(&mut rest, 16);
        assert_eq!(a.as_ptr() as usize % ALIGN, 0);
        assert_eq!(b.as_ptr() as usize % ALIGN, 0);
        assert_eq!(rest.len(), 1024 - 128);
    }
}
