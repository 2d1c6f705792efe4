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

/// Reads lines one at a time ([`LineReader::next_line`]).
#[derive(Debug)]
pub struct LineReader<R> {
    input: R,
    max: u64,
    /// A line that did not lie whole in the input's buffer, copied.
    buf: Vec<u8>,
    /// Bytes of the input's buffer the line last handed over still takes up: they are
    /// consumed when the next line is asked for.
    lent: usize,
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
            lent: 0,
            lines: 0,
            blank: 0,
        }
    }

    /// The next line that is not blank, with its 1-based number; None at the end of the
    /// input. A line that lies whole in the input's buffer (most do) is handed over
    /// from there, not copied.
    pub fn next_line(&mut self) -> io::Result<Option<(usize, Line<'_>)>> {
        self.input.consume(std::mem::take(&mut self.lent));
        let room = usize::try_from(self.max.saturating_add(1)).unwrap_or(usize::MAX);
        loop {
            let whole = {
                let available = match self.input.fill_buf() {
                    Ok(b) => b,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(e),
                };
                // The end of the input: asked once, so a terminal's Ctrl-D ends it.
                if available.is_empty() {
                    return Ok(None);
                }
                let window = &available[..available.len().min(room)];
                memchr::memchr(b'\n', window).map(|i| {
                    let line = trimmed(&window[..=i]);
                    (i + 1, line.len(), is_blank(line))
                })
            };
            if let Some((used, len, blank)) = whole {
                self.lines += 1;
                if blank {
                    self.blank += 1;
                    self.input.consume(used);
                    continue;
                }
                self.lent = used;
                // The buffer still holds the line: asked again, it gives the same
                // bytes without reading.
                let line = &self.input.fill_buf()?[..len];
                return Ok(Some((self.lines, Ok(line))));
            }
            // A line across the buffer's end, too long, or the input's last without a
            // newline: copied.
            self.buf.clear();
            let read = read_line(&mut self.input, self.max.saturating_add(1), &mut self.buf)?;
            if read == 0 {
                return Ok(None);
            }
            self.lines += 1;
            if self.buf.len() as u64 > self.max && self.buf.last() != Some(&b'\n') {
                let rest = self.input.skip_until(b'\n')?;
                return Ok(Some((self.lines, Err((self.buf.len() + rest) as u64))));
            }
            let len = trimmed(&self.buf).len();
            if is_blank(&self.buf[..len]) {
                self.blank += 1;
                continue;
            }
            return Ok(Some((self.lines, Ok(&self.buf[..len]))));
        }
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

/// A line without its ending (`\n` or `\r\n`).
fn trimmed(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
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
        while let Some((n, line)) = r.next_line().expect("read") {
            seen.push((n, line.map(<[u8]>::to_vec)));
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

    /// Lines handed over from the input's buffer and lines copied across its refills
    /// read alike, whatever the buffer's size and the limit.
    #[test]
    fn lines_read_alike_whatever_the_buffer() {
        let input: &[u8] = b"ab\r\ncdefgh\n\n \r\nijklmnopq\nr\n\nstuvwxyz";
        let read = |capacity: usize, max: u64| {
            let mut r = LineReader::new(io::BufReader::with_capacity(capacity, input), max);
            let mut seen = Vec::new();
            while let Some((n, line)) = r.next_line().expect("read") {
                seen.push((n, line.map(<[u8]>::to_vec)));
            }
            (seen, r.lines(), r.blank())
        };
        for max in 1..12 {
            let whole = read(input.len(), max);
            for capacity in 1..input.len() {
                assert_eq!(
                    read(capacity, max),
                    whole,
                    "capacity {capacity}, limit {max}"
                );
            }
        }
        let (seen, lines, blank) = read(input.len(), 6);
        assert_eq!((lines, blank), (8, 3));
        assert_eq!(seen[1], (2, Ok(b"cdefgh".to_vec())));
        assert_eq!(seen[2], (5, Err(10)));
    }

    /// The end of input whose last line ends in a newline is asked for once: a
    /// terminal's Ctrl-D ends the samples, where asking again would wait for another.
    /// (A last line without a newline is asked past twice, as std's `read_until`
    /// asks.)
    #[test]
    fn the_end_is_asked_for_once() {
        struct Counted<'a>(&'a [u8], usize);
        impl io::Read for Counted<'_> {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                let n = self.0.len().min(buf.len());
                buf[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                self.1 += usize::from(n == 0);
                Ok(n)
            }
        }
        for input in [&b"a\nb\n"[..], b"\n \n", b""] {
            let mut source = Counted(input, 0);
            let mut r = LineReader::new(io::BufReader::new(&mut source), 10);
            while r.next_line().expect("read").is_some() {}
            drop(r);
            assert_eq!(source.1, 1, "{input:?}");
        }
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
