//! How keys spread over a task's samples: the modal key and the number of distinct
//! ones. Phase one picks the modal plan with it and phase two every other agreement,
//! so it sits below both.

/// The modal key: (index of its first occurrence, count). Ties go to the first seen,
/// so the choice is reproducible.
pub(crate) fn modal<K: Ord>(keys: impl Iterator<Item = K>) -> Option<(usize, usize)> {
    tally(keys.enumerate().map(|(i, k)| (i, k, 1))).1
}

/// How keys spread, each given as (index of its sample, key, how many samples it
/// stands for): the number of distinct keys, and the modal key's (index of its first
/// sample, count), ties to the first seen. Sorted once instead of counted in a map:
/// a task has a handful of samples, and a map would cost an allocation and a search per
/// key.
pub(super) fn tally<K: Ord>(
    keys: impl Iterator<Item = (usize, K, usize)>,
) -> (usize, Option<(usize, usize)>) {
    let mut all: Vec<(K, usize, usize)> = keys.map(|(i, k, times)| (k, i, times)).collect();
    // Samples mostly agree: one key throughout needs no sort.
    if let Some((one, ..)) = all.first()
        && all.iter().all(|(k, ..)| k == one)
    {
        let first = all.iter().map(|(_, i, _)| *i).min();
        let count = all.iter().map(|(.., times)| times).sum();
        return (1, first.map(|f| (f, count)));
    }
    // Each key's samples together, its first one first.
    all.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)));
    let (mut distinct, mut best) = (0, None);
    let mut rest = &all[..];
    while let Some((key, first, _)) = rest.first() {
        let len = rest.iter().take_while(|(k, ..)| k == key).count();
        let count = rest[..len].iter().map(|(.., times)| times).sum();
        distinct += 1;
        if best.is_none_or(|(f, c)| count > c || count == c && *first < f) {
            best = Some((*first, count));
        }
        rest = &rest[len..];
    }
    (distinct, best)
}
