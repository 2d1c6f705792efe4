//! The bare wasmtime floor both sandbox benchmarks compare against: what any WASI p1
//! harness on this engine must do per call (a fresh WASI context, store and instance),
//! with none of plangate's epoch work. One copy, so the two benchmarks agree on it.

use std::path::PathBuf;

use wasmtime::{Engine, InstancePre, Linker, Module, Store, TypedFunc};
use wasmtime_wasi::p1::WasiP1Ctx;
use wasmtime_wasi::p2::pipe::{MemoryInputPipe, MemoryOutputPipe};
use wasmtime_wasi::{FsPerms, WasiCtxBuilder};

/// The floor: what any WASI p1 harness on this engine must do per call.
pub(crate) struct Bare {
    pre: InstancePre<WasiP1Ctx>,
    engine: Engine,
    /// `(host dir, guest path)`, preopened read-only on every call as a plain harness
    /// would, so a tool that reads files is measured against the same work.
    mounts: Vec<(PathBuf, String)>,
}

impl Bare {
    pub(crate) fn new(engine: &Engine, module: &Module) -> Self {
        let mut linker: Linker<WasiP1Ctx> = Linker::new(engine);
        wasmtime_wasi::p1::add_to_linker_sync(&mut linker, |c| c).expect("link");
        Self {
            pre: linker.instantiate_pre(module).expect("pre"),
            engine: engine.clone(),
            mounts: Vec::new(),
        }
    }

    /// Adds a read-only preopen.
    #[allow(dead_code, reason = "the criterion bench runs the echo guest only")]
    pub(crate) fn mount(mut self, host: impl Into<PathBuf>, guest: impl Into<String>) -> Self {
        self.mounts.push((host.into(), guest.into()));
        self
    }

    pub(crate) fn call(&self, stdin: &[u8]) -> Vec<u8> {
        let (mut store, start, stdout) = self.instantiate(stdin);
        // A tool ends with proc_exit: an `I32Exit` error that is its normal end.
        if let Err(e) = start.call(&mut store, ()) {
            e.downcast_ref::<wasmtime_wasi::I32Exit>()
                .unwrap_or_else(|| panic!("run: {e:#}"));
        }
        drop(store);
        stdout.contents().to_vec()
    }

    /// Everything a call does before the guest runs, and nothing after: the set-up
    /// half of a call, timed alone to split a call's cost.
    #[allow(dead_code, reason = "the criterion bench times whole calls only")]
    pub(crate) fn setup_only(&self, stdin: &[u8]) {
        drop(self.instantiate(stdin));
    }

    fn instantiate(&self, stdin: &[u8]) -> (Store<WasiP1Ctx>, TypedFunc<(), ()>, MemoryOutputPipe) {
        let stdout = MemoryOutputPipe::new(1 << 20);
        let mut b = WasiCtxBuilder::new();
        // The fastest plain setup: file and pipe operations on the calling thread.
        b.allow_blocking_current_thread(true);
        b.stdin(MemoryInputPipe::new(stdin.to_vec()))
            .stdout(stdout.clone());
        for (host, guest) in &self.mounts {
            b.preopened_dir(host, guest, FsPerms::ReadOnly)
                .expect("preopen");
        }
        let mut store = Store::new(&self.engine, b.build_p1());
        // The engine has fuel and epochs on: a store needs both set to run at all.
        store.set_fuel(u64::MAX / 2).expect("fuel");
        store.set_epoch_deadline(u64::MAX / 2);
        let inst = self.pre.instantiate(&mut store).expect("instantiate");
        let start = inst
            .get_typed_func::<(), ()>(&mut store, "_start")
            .expect("_start");
        (store, start, stdout)
    }
}
