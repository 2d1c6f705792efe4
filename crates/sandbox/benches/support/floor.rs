//! The bare wasmtime floor both sandbox benchmarks compare against: what any WASI p1
//! harness on this engine must do per call (a fresh WASI context, store and instance),
//! with none of plangate's epoch work. One copy, so the two benchmarks agree on it.

use wasmtime::{Engine, InstancePre, Linker, Module, Store};
use wasmtime_wasi::WasiCtxBuilder;
use wasmtime_wasi::p1::WasiP1Ctx;
use wasmtime_wasi::p2::pipe::{MemoryInputPipe, MemoryOutputPipe};

/// The floor: what any WASI p1 harness on this engine must do per call.
pub(crate) struct Bare {
    pre: InstancePre<WasiP1Ctx>,
    engine: Engine,
}

impl Bare {
    pub(crate) fn new(engine: &Engine, module: &Module) -> Self {
        let mut linker: Linker<WasiP1Ctx> = Linker::new(engine);
        wasmtime_wasi::p1::add_to_linker_sync(&mut linker, |c| c).expect("link");
        Self {
            pre: linker.instantiate_pre(module).expect("pre"),
            engine: engine.clone(),
        }
    }

    pub(crate) fn call(&self, stdin: &[u8]) -> Vec<u8> {
        let stdout = MemoryOutputPipe::new(1 << 20);
        let mut b = WasiCtxBuilder::new();
        // The fastest plain setup: file and pipe operations on the calling thread.
        b.allow_blocking_current_thread(true);
        b.stdin(MemoryInputPipe::new(stdin.to_vec()))
            .stdout(stdout.clone());
        let mut store = Store::new(&self.engine, b.build_p1());
        // The engine has fuel and epochs on: a store needs both set to run at all.
        store.set_fuel(u64::MAX / 2).expect("fuel");
        store.set_epoch_deadline(u64::MAX / 2);
        let inst = self.pre.instantiate(&mut store).expect("instantiate");
        let start = inst
            .get_typed_func::<(), ()>(&mut store, "_start")
            .expect("_start");
        start.call(&mut store, ()).expect("run");
        drop(store);
        stdout.contents().to_vec()
    }
}
