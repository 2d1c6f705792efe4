//! The global allocator: mimalloc, entered the way Rust's own `System` allocator enters
//! malloc. The `mimalloc` crate's `MiMalloc` takes mimalloc's aligned entry for every
//! request, whose extra checks cost instructions on every block (docs/benchmarks.md,
//! "Build settings"); nearly every request needs no more than malloc's alignment.
#![allow(
    unsafe_code,
    reason = "a GlobalAlloc is unsafe to implement: it hands raw blocks to the whole program"
)]

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;

use libmimalloc_sys::{mi_free, mi_malloc, mi_malloc_aligned, mi_realloc, mi_realloc_aligned};

/// The alignment of every mimalloc block of at least this size (`MI_MAX_ALIGN_SIZE`:
/// its bins round sizes to 16 bytes and assert this alignment when a block is taken);
/// a smaller block is 8-aligned, which an alignment no larger than the size needs.
const MIN_ALIGN: usize = 16;

/// mimalloc, through its plain entries when the layout's alignment is one malloc
/// already gives (the test `std`'s `System` uses: an alignment up to 16 and no larger
/// than the size), through its aligned entries otherwise.
pub(crate) struct Mimalloc;

fn plain(align: usize, size: usize) -> bool {
    align <= MIN_ALIGN && align <= size
}

// SAFETY: every block comes from mimalloc and goes back to it: `mi_free` and the
// realloc entries take blocks from either entry, and the aligned entries are taken
// whenever malloc's alignment would not do.
unsafe impl GlobalAlloc for Mimalloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: plain C calls; a null return is the allocation failure Rust expects.
        unsafe {
            if plain(layout.align(), layout.size()) {
                mi_malloc(layout.size()).cast()
            } else {
                mi_malloc_aligned(layout.size(), layout.align()).cast()
            }
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: `ptr` came from this allocator (GlobalAlloc's contract).
        unsafe { mi_free(ptr.cast::<c_void>()) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` came from this allocator with `layout` (GlobalAlloc's contract).
        unsafe {
            if plain(layout.align(), new_size) {
                mi_realloc(ptr.cast::<c_void>(), new_size).cast()
            } else {
                mi_realloc_aligned(ptr.cast::<c_void>(), new_size, layout.align()).cast()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_have_the_alignment_asked_for() {
        // Sizes across mimalloc's small bins, each alignment up to a page, through
        // alloc and a realloc that grows or shrinks the block.
        for align in [1, 2, 4, 8, 16, 32, 64, 4096] {
            for size in (1..300).chain([1000, 4096, 70_000]) {
                let layout = Layout::from_size_align(size, align).unwrap();
                for new in [size * 3, size.div_ceil(2)] {
                    // SAFETY: a non-zero layout; each block is freed once, with the
                    // layout it has then.
                    unsafe {
                        let p = Mimalloc.alloc(layout);
                        assert!(!p.is_null());
                        assert_eq!(p as usize % align, 0, "alloc {size} {align}");
                        p.write_bytes(0xAB, size);
                        let q = Mimalloc.realloc(p, layout, new);
                        assert_eq!(q as usize % align, 0, "realloc {size}->{new} {align}");
                        assert_eq!(*q.add(new.min(size) - 1), 0xAB);
                        Mimalloc.dealloc(q, Layout::from_size_align(new, align).unwrap());
                    }
                }
            }
        }
    }
}
