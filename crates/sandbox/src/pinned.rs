//! The pinned sources a guest reads through WASI: a virtual clock that only moves when
//! read or slept on, and a seeded random stream that does not depend on how wasmtime
//! samples it. Both are fresh per call, so calls in one epoch see identical values.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use sha2::{Digest, Sha256};

/// The monotonic clock's reading at the start of every call. Any constant works; a
/// non-zero one keeps guests that treat 0 as "unset" honest.
const MONOTONIC_BASE_NS: u64 = 1_000_000_000;

/// Virtual time for one call: nanoseconds elapsed since the epoch instant.
///
/// Shared by the wall clock, the monotonic clock and the `poll_oneoff` shadow, so a
/// virtual sleep moves both clocks together. Atomics because the clock traits take
/// `&self` and must be `Send`.
#[derive(Debug)]
pub(crate) struct VirtualTime {
    elapsed_ns: AtomicU64,
    step_ns: u64,
    instant_ns: u64,
}

impl VirtualTime {
    pub(crate) fn new(instant_ns: u64, step_ns: u64) -> Arc<Self> {
        Arc::new(Self {
            elapsed_ns: AtomicU64::new(0),
            step_ns,
            instant_ns,
        })
    }

    /// One clock read: returns the current elapsed time and then moves it by the step,
    /// so a busy-wait on the clock still terminates when the step is non-zero.
    fn read(&self) -> u64 {
        self.elapsed_ns.fetch_add(self.step_ns, Ordering::Relaxed)
    }

    /// The elapsed time without counting as a read (used to compute sleep deadlines).
    pub(crate) fn peek(&self) -> u64 {
        self.elapsed_ns.load(Ordering::Relaxed)
    }

    pub(crate) fn advance(&self, ns: u64) {
        self.elapsed_ns.fetch_add(ns, Ordering::Relaxed);
    }

    pub(crate) fn wall_ns_at(&self, elapsed: u64) -> u64 {
        self.instant_ns.saturating_add(elapsed)
    }

    pub(crate) fn monotonic_ns_at(&self, elapsed: u64) -> u64 {
        MONOTONIC_BASE_NS.saturating_add(elapsed)
    }
}

/// The wall clock a pinned guest sees: the epoch instant plus virtual time.
pub(crate) struct PinnedWallClock(pub(crate) Arc<VirtualTime>);

impl wasmtime_wasi::HostWallClock for PinnedWallClock {
    fn resolution(&self) -> Duration {
        Duration::from_nanos(1)
    }

    fn now(&self) -> Duration {
        let t = self.0.read();
        Duration::from_nanos(self.0.wall_ns_at(t))
    }
}

/// The monotonic clock a pinned guest sees.
pub(crate) struct PinnedMonotonicClock(pub(crate) Arc<VirtualTime>);

impl wasmtime_wasi::HostMonotonicClock for PinnedMonotonicClock {
    fn resolution(&self) -> u64 {
        1
    }

    fn now(&self) -> u64 {
        let t = self.0.read();
        self.0.monotonic_ns_at(t)
    }
}

/// A keystream of SHA-256 blocks over (domain, seed, counter).
///
/// wasmtime-wasi 48 fills random bytes by drawing one `next_u32` per byte and keeping its
/// low byte; another version may call `fill_bytes`. Returning exactly one keystream byte
/// from every `next_u32` makes the guest's bytes the keystream itself either way, so the
/// seed alone decides what a guest sees, whatever the sampling code inside wasmtime does.
/// A `u64` is a guest's own draw (`get-random-u64`), never sampled into bytes: it takes
/// the next 8 keystream bytes, little-endian, so it spans every u64.
#[derive(Clone)]
pub(crate) struct ByteStreamRng {
    key: [u8; 32],
    counter: u64,
    block: [u8; 32],
    pos: usize,
}

impl ByteStreamRng {
    pub(crate) fn new(seed: u64, domain: &str) -> Self {
        let mut h = Sha256::new();
        h.update(b"plangate-sandbox-rng-v1\0");
        h.update(domain.as_bytes());
        h.update([0]);
        h.update(seed.to_le_bytes());
        Self {
            key: h.finalize().into(),
            counter: 0,
            block: [0; 32],
            pos: 32,
        }
    }

    fn next_byte(&mut self) -> u8 {
        if self.pos == self.block.len() {
            let mut h = Sha256::new();
            h.update(self.key);
            h.update(self.counter.to_le_bytes());
            self.block = h.finalize().into();
            self.counter += 1;
            self.pos = 0;
        }
        let b = self.block[self.pos];
        self.pos += 1;
        b
    }
}

impl rand_core::TryRng for ByteStreamRng {
    type Error = Infallible;

    fn try_next_u32(&mut self) -> Result<u32, Infallible> {
        Ok(u32::from(self.next_byte()))
    }

    fn try_next_u64(&mut self) -> Result<u64, Infallible> {
        let mut b = [0; 8];
        for x in &mut b {
            *x = self.next_byte();
        }
        Ok(u64::from_le_bytes(b))
    }

    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Infallible> {
        for b in dst {
            *b = self.next_byte();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_core::Rng;

    #[test]
    fn draws_and_fills_give_the_same_stream() {
        let mut a = ByteStreamRng::new(7, "secure");
        let mut b = ByteStreamRng::new(7, "secure");
        let drawn: Vec<u8> = (0..100).map(|_| a.next_u32() as u8).collect();
        let mut filled = vec![0; 100];
        b.fill_bytes(&mut filled);
        assert_eq!(drawn, filled);
        let mut c = ByteStreamRng::new(8, "secure");
        let mut other = vec![0; 100];
        c.fill_bytes(&mut other);
        assert_ne!(filled, other);
    }

    #[test]
    fn a_u64_draw_is_the_next_eight_bytes() {
        let mut a = ByteStreamRng::new(7, "secure");
        let mut b = ByteStreamRng::new(7, "secure");
        let mut bytes = [0; 24];
        b.fill_bytes(&mut bytes);
        let first = a.next_u64();
        assert_eq!(first, u64::from_le_bytes(bytes[..8].try_into().unwrap()));
        assert_eq!(a.next_u32(), u32::from(bytes[8]));
        assert_eq!(
            a.next_u64(),
            u64::from_le_bytes(bytes[9..17].try_into().unwrap())
        );
        let big = (0..64)
            .filter(|_| a.next_u64() > u64::from(u32::MAX))
            .count();
        assert!(big > 32, "{big} of 64 draws above 2^32");
    }

    #[test]
    fn clock_steps_per_read_and_sleep_moves_both_clocks() {
        let t = VirtualTime::new(1_000, 10);
        assert_eq!(t.read(), 0);
        assert_eq!(t.read(), 10);
        t.advance(1_000_000);
        assert_eq!(t.peek(), 1_000_020);
        assert_eq!(t.wall_ns_at(t.peek()), 1_001_020);
    }
}
