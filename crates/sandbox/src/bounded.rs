//! The host side of WASI 0.2 held to a component call's limits (docs/design.md,
//! "Limits and outcomes"). Fuel and epochs stop only wasm code: a guest that waits in a
//! host call (a poll, a blocking stream write nobody drains, a response that never
//! comes) or makes the host hold memory for it (header maps) is out of their reach.
//! Here every blocking wait ends at the call's wall-time deadline as a `timeout`, and
//! the bytes of every header map a guest builds count against the call's memory limit.

use std::time::Instant;

use wasmtime::StoreContextMut;
use wasmtime::component::{Linker, Resource, ResourceTable};
use wasmtime_wasi::p2::bindings::io::poll as io_poll;
use wasmtime_wasi::p2::bindings::io::streams as io_streams;
use wasmtime_wasi::p2::{DynInputStream, DynOutputStream, DynPollable, StreamResult};
use wasmtime_wasi::runtime::in_tokio;
use wasmtime_wasi_http::p2::HeaderResult;
use wasmtime_wasi_http::p2::bindings::http::types as http_types;
use wasmtime_wasi_http::{FieldMap, WasiHttpView};

use crate::store::Limiter;

/// The WASI release wasmtime-wasi 48 links, as in `component`: shadowing at this
/// version covers guests that import any 0.2.x.
const WASI: &str = "0.2.12";

/// What a component call's store offers the bounds here.
pub(crate) trait Bounded: WasiHttpView + Send + 'static {
    /// The call's resource table.
    fn resources(&mut self) -> &mut ResourceTable;
    /// When the call's wall time is up.
    fn deadline(&self) -> Instant;
    /// The call's memory limit, which host bytes count against.
    fn limiter(&mut self) -> &mut Limiter;
}

/// Shadows every blocking `wasi:io` call with one that ends at the deadline, and the
/// header-map calls that add bytes with ones that count them.
pub(crate) fn shadow<T: Bounded>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
    shadow_poll(linker)?;
    shadow_output(linker)?;
    shadow_input(linker)?;
    shadow_fields(linker)
}

/// Runs a host future to completion, or until the call's deadline, which ends the call
/// as a `timeout` (the trap the epoch deadline raises in wasm code).
fn until_deadline<F: Future>(deadline: Instant, f: F) -> wasmtime::Result<F::Output> {
    in_tokio(async { tokio::time::timeout_at(deadline.into(), f).await })
        .map_err(|_| wasmtime::Error::new(wasmtime::Trap::Interrupt))
}

type Pollable = Resource<DynPollable>;
type Out = Resource<DynOutputStream>;
type In = Resource<DynInputStream>;
type StreamOut<T> = wasmtime::Result<(Result<T, io_streams::StreamError>,)>;

/// A stream operation's result as the guest sees it: a stream error is the guest's, a
/// trap the call's.
fn stream<T>(table: &mut ResourceTable, r: StreamResult<T>) -> StreamOut<T> {
    Ok((match r {
        Ok(x) => Ok(x),
        Err(e) => Err(io_streams::Host::convert_stream_error(table, e)?),
    },))
}

fn shadow_poll<T: Bounded>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
    let mut i = linker.instance(&format!("wasi:io/poll@{WASI}"))?;
    i.func_wrap(
        "poll",
        |mut st: StoreContextMut<'_, T>, (list,): (Vec<Pollable>,)| {
            let c = st.data_mut();
            let deadline = c.deadline();
            let table = c.resources();
            Ok((until_deadline(deadline, io_poll::Host::poll(table, list))??,))
        },
    )?;
    i.func_wrap(
        "[method]pollable.block",
        |mut st: StoreContextMut<'_, T>, (p,): (Pollable,)| {
            let c = st.data_mut();
            let deadline = c.deadline();
            let table = c.resources();
            until_deadline(deadline, io_poll::HostPollable::block(table, p))?
        },
    )?;
    Ok(())
}

fn shadow_output<T: Bounded>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
    use io_streams::HostOutputStream as H;
    let mut i = linker.instance(&format!("wasi:io/streams@{WASI}"))?;
    i.func_wrap(
        "[method]output-stream.blocking-write-and-flush",
        |mut st: StoreContextMut<'_, T>, (s, bytes): (Out, Vec<u8>)| -> StreamOut<()> {
            let c = st.data_mut();
            let deadline = c.deadline();
            let table = c.resources();
            let r = until_deadline(deadline, H::blocking_write_and_flush(table, s, bytes))?;
            stream(table, r)
        },
    )?;
    i.func_wrap(
        "[method]output-stream.blocking-write-zeroes-and-flush",
        |mut st: StoreContextMut<'_, T>, (s, n): (Out, u64)| -> StreamOut<()> {
            let c = st.data_mut();
            let deadline = c.deadline();
            let table = c.resources();
            let r = until_deadline(deadline, H::blocking_write_zeroes_and_flush(table, s, n))?;
            stream(table, r)
        },
    )?;
    i.func_wrap(
        "[method]output-stream.blocking-flush",
        |mut st: StoreContextMut<'_, T>, (s,): (Out,)| -> StreamOut<()> {
            let c = st.data_mut();
            let deadline = c.deadline();
            let table = c.resources();
            let r = until_deadline(deadline, H::blocking_flush(table, s))?;
            stream(table, r)
        },
    )?;
    i.func_wrap(
        "[method]output-stream.blocking-splice",
        |mut st: StoreContextMut<'_, T>, (s, from, n): (Out, In, u64)| -> StreamOut<u64> {
            let c = st.data_mut();
            let deadline = c.deadline();
            let table = c.resources();
            let r = until_deadline(deadline, H::blocking_splice(table, s, from, n))?;
            stream(table, r)
        },
    )?;
    Ok(())
}

fn shadow_input<T: Bounded>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
    use io_streams::HostInputStream as H;
    let mut i = linker.instance(&format!("wasi:io/streams@{WASI}"))?;
    i.func_wrap(
        "[method]input-stream.blocking-read",
        |mut st: StoreContextMut<'_, T>, (s, n): (In, u64)| -> StreamOut<Vec<u8>> {
            let c = st.data_mut();
            let deadline = c.deadline();
            let table = c.resources();
            let r = until_deadline(deadline, H::blocking_read(table, s, n))?;
            stream(table, r)
        },
    )?;
    i.func_wrap(
        "[method]input-stream.blocking-skip",
        |mut st: StoreContextMut<'_, T>, (s, n): (In, u64)| -> StreamOut<u64> {
            let c = st.data_mut();
            let deadline = c.deadline();
            let table = c.resources();
            let r = until_deadline(deadline, H::blocking_skip(table, s, n))?;
            stream(table, r)
        },
    )?;
    Ok(())
}

type Fields = Resource<FieldMap>;
type HeaderOut<T> = wasmtime::Result<(Result<T, http_types::HeaderError>,)>;

/// A header operation's result as the guest sees it, and on success its bytes charged
/// to the call's memory (a `memory_limit` when they do not fit).
fn charged<T: Bounded, R>(c: &mut T, r: HeaderResult<R>, bytes: usize) -> HeaderOut<R> {
    match r {
        Ok(x) => {
            c.limiter().charge_host(bytes)?;
            Ok((Ok(x),))
        }
        Err(e) => Ok((Err(http_types::Host::convert_header_error(
            &mut c.http(),
            e,
        )?),)),
    }
}

/// The bytes a header map holds, as wasmtime-wasi-http counts them against its own
/// per-map limit: names and values.
fn map_bytes(map: &FieldMap) -> usize {
    map.iter().map(|(k, v)| k.as_str().len() + v.len()).sum()
}

/// Header maps that gain bytes charge them to the call's memory. Bytes are charged when
/// added and not given back when a map is dropped: a tool's few headers are far from
/// any limit, and a guest looping on maps meets it.
fn shadow_fields<T: Bounded>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
    use http_types::HostFields as H;
    let mut i = linker.instance(&format!("wasi:http/types@{WASI}"))?;
    i.func_wrap(
        "[static]fields.from-list",
        |mut st: StoreContextMut<'_, T>,
         (entries,): (Vec<(String, Vec<u8>)>,)|
         -> HeaderOut<Fields> {
            let c = st.data_mut();
            let bytes = entries.iter().map(|(k, v)| k.len() + v.len()).sum();
            let r = H::from_list(&mut c.http(), entries);
            charged(c, r, bytes)
        },
    )?;
    i.func_wrap(
        "[method]fields.set",
        |mut st: StoreContextMut<'_, T>,
         (f, name, values): (Fields, String, Vec<Vec<u8>>)|
         -> HeaderOut<()> {
            let c = st.data_mut();
            let bytes = name.len() + values.iter().map(Vec::len).sum::<usize>();
            let r = H::set(&mut c.http(), f, name, values);
            charged(c, r, bytes)
        },
    )?;
    i.func_wrap(
        "[method]fields.append",
        |mut st: StoreContextMut<'_, T>,
         (f, name, value): (Fields, String, Vec<u8>)|
         -> HeaderOut<()> {
            let c = st.data_mut();
            let bytes = name.len() + value.len();
            let r = H::append(&mut c.http(), f, name, value);
            charged(c, r, bytes)
        },
    )?;
    i.func_wrap(
        "[method]fields.clone",
        |mut st: StoreContextMut<'_, T>, (f,): (Fields,)| -> wasmtime::Result<(Fields,)> {
            let c = st.data_mut();
            let bytes = map_bytes(c.resources().get(&f)?);
            let copy = H::clone(&mut c.http(), f)?;
            c.limiter().charge_host(bytes)?;
            Ok((copy,))
        },
    )?;
    Ok(())
}
