//! A map that forgets its oldest entries beyond a bound: what a warm gate remembers
//! across requests (first answers kept for determinism witnesses, resolved IDs) must
//! not grow with a server's uptime. Without a bound (a batch run), it never forgets.

use std::collections::{HashMap, VecDeque};
use std::hash::Hash;

/// Entries by key, forgotten oldest first once more than `bound` are kept.
#[derive(Debug)]
pub(crate) struct Bounded<K, V> {
    map: HashMap<K, V>,
    /// Keys in insertion order, oldest first (only kept when bounded).
    order: VecDeque<K>,
    bound: Option<usize>,
}

impl<K, V> Default for Bounded<K, V> {
    fn default() -> Self {
        Bounded {
            map: HashMap::new(),
            order: VecDeque::new(),
            bound: None,
        }
    }
}

impl<K: Hash + Eq + Clone, V> Bounded<K, V> {
    /// A map keeping at most `bound` entries (`None`: every entry).
    pub(crate) fn new(bound: Option<usize>) -> Self {
        Bounded {
            bound,
            ..Bounded::default()
        }
    }

    pub(crate) fn get(&self, key: &K) -> Option<&V> {
        self.map.get(key)
    }

    /// The entry under `key`, inserting `value` when there is none (and forgetting the
    /// oldest entry when that passes the bound).
    pub(crate) fn get_or_insert(&mut self, key: K, value: V) -> &V {
        if !self.map.contains_key(&key) {
            if let Some(bound) = self.bound {
                while self.map.len() >= bound.max(1) {
                    let Some(oldest) = self.order.pop_front() else {
                        break;
                    };
                    self.map.remove(&oldest);
                }
                self.order.push_back(key.clone());
            }
            self.map.insert(key.clone(), value);
        }
        &self.map[&key]
    }

    /// Entries kept.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_entry_is_forgotten_first() {
        let mut m = Bounded::new(Some(2));
        m.get_or_insert("a", 1);
        m.get_or_insert("b", 2);
        // An entry already kept is neither replaced nor refreshed.
        assert_eq!(*m.get_or_insert("a", 9), 1);
        m.get_or_insert("c", 3);
        assert_eq!(
            (m.get(&"a"), m.get(&"b"), m.get(&"c")),
            (None, Some(&2), Some(&3))
        );
        assert_eq!(m.len(), 2);
        let mut unbounded = Bounded::new(None);
        for i in 0..100 {
            unbounded.get_or_insert(i, i);
        }
        assert_eq!(unbounded.len(), 100);
    }
}
