//! A samples file read line by line, as every reader of samples numbers and bounds them:
//! 1-based numbers counting blank lines, blank lines passed over, the line ending
//! (`\n` or `\r\n`) dropped, and a line over the limit handed over as its length only.
//! `plangate score`, `plangate eval` and the Python package all read through this.

use std::io::{self, BufRead};

use plangate_gate::task::TaskError;

/// A line's bytes, or, for a line longer than the limit, how long it was, line ending
/// included (its bytes are passed over, never held: a file with no newline cannot fill
/// the memory).
pub type Line<'a> = Result<&'a [u8], u64>;

/// Reads lines one at a time: [`LineReader::advance`] to the next line that is not
/// blank, then [`LineReader::line`] for it.
#[derive(Debug)]
pub struct LineReader<R> {
    input: R,
    max: u64,
    buf: Vec<u8>,
    /// Where the current line's bytes are in `buf`, or its length when over `max`.
    current: Result<std::ops::Range<usize>, u64>,
    lines: usize,
    blank: usize,
}

impl<R: BufRead> LineReader<R> {
    /// Reads `input`, whose lines may be at most `max` bytes long.
    pub fn new(input: R, max: u64) -> Self {
        LineReader {
            input,
            max,
            buf: Vec::new(),
            current: Ok(0..0),
            lines: 0,
            blank: 0,
        }
    }

    /// Moves to the next line that is not blank and returns its 1-based number, or
    /// None at the end of the input.
    pub fn advance(&mut self) -> io::Result<Option<usize>> {
        loop {
            self.buf.clear();
            let read = read_line(&mut self.input, self.max.saturating_add(1), &mut self.buf)?;
            if read == 0 {
                return Ok(None);
            }
            self.lines += 1;
            if self.buf.len() as u64 > self.max && self.buf.last() != Some(&b'\n') {
                let rest = self.input.skip_until(b'\n')?;
                self.current = Err((self.buf.len() + rest) as u64);
                return Ok(Some(self.lines));
            }
            let mut end = self.buf.len();
            if self.buf[..end].ends_with(b"\n") {
                end -= 1;
            }
            if self.buf[..end].ends_with(b"\r") {
                end -= 1;
            }
            if is_blank(&self.buf[..end]) {
                self.blank += 1;
                continue;
            }
            self.current = Ok(0..end);
            return Ok(Some(self.lines));
        }
    }

    /// The line [`LineReader::advance`] moved to.
    pub fn line(&self) -> Line<'_> {
        self.current.clone().map(|range| &self.buf[range])
    }

    /// Lines read so far, blank ones included.
    pub fn lines(&self) -> usize {
        self.lines
    }

    /// Blank lines read so far.
    pub fn blank(&self) -> usize {
        self.blank
    }
}

/// `read_until(b'\n')` of at most `limit` bytes (std's `take(limit).read_until`),
/// finding the newline with `memchr`'s vector search instead of std's word-at-a-time one.
fn read_line(input: &mut impl BufRead, limit: u64, buf: &mut Vec<u8>) -> io::Result<usize> {
    let mut read = 0;
    loop {
        let available = match input.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let room = usize::try_from(limit - read as u64).unwrap_or(usize::MAX);
        let available = &available[..available.len().min(room)];
        if available.is_empty() {
            return Ok(read);
        }
        let (ended, used) = match memchr::memchr(b'\n', available) {
            Some(i) => (true, i + 1),
            None => (false, available.len()),
        };
        buf.extend_from_slice(&available[..used]);
        input.consume(used);
        read += used;
        if ended {
            return Ok(read);
        }
    }
}

/// Whether a line holds nothing but whitespace: it is passed over, not a bad line.
pub fn is_blank(line: &[u8]) -> bool {
    line.iter().all(u8::is_ascii_whitespace)
}

/// The input error for a line over `max` bytes (`--max-line-bytes`).
pub fn too_long(bytes: u64, max: u64) -> TaskError {
    TaskError {
        field: String::new(),
        message: format!(
            "the line is longer than {max} bytes, the limit set by --max-line-bytes ({bytes} bytes with its line ending); it was not read"
        ),
        task_id: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Numbers count blank lines, endings go, and a long line is its length alone.
    #[test]
    fn lines_are_numbered_trimmed_and_bounded() {
        let input: &[u8] = b"a\r\n\n  \nbb\n0123456789\nc";
        let mut r = LineReader::new(input, 5);
        let mut seen = Vec::new();
        while let Some(n) = r.advance().expect("read") {
            seen.push((n, r.line().map(<[u8]>::to_vec)));
        }
        assert_eq!(
            seen,
            [
                (1, Ok(b"a".to_vec())),
                (4, Ok(b"bb".to_vec())),
                (5, Err(11)),
                (6, Ok(b"c".to_vec())),
            ]
        );
        assert_eq!((r.lines(), r.blank()), (6, 2));
    }

    /// The newline search reads as std's `take(limit).read_until` does, lines split
    /// across the buffer's refills included.
    #[test]
    fn lines_read_as_std_reads_them() {
        use std::io::Read as _;
        let input: &[u8] = b"ab\ncdefgh\n\n\r\nijklmnopq\nr\nstuvwxyz";
        for capacity in 1..10 {
            for limit in 1..12 {
                let mut ours = io::BufReader::with_capacity(capacity, input);
                let mut std = io::BufReader::with_capacity(capacity, input);
                loop {
                    let (mut a, mut b) = (Vec::new(), Vec::new());
                    let n = read_line(&mut ours, limit, &mut a).unwrap();
                    let m = std.by_ref().take(limit).read_until(b'\n', &mut b).unwrap();
                    assert_eq!((n, &a), (m, &b), "capacity {capacity}, limit {limit}");
                    if n == 0 {
                        break;
                    }
                }
            }
        }
    }
}
