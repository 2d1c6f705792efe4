//! A call's memory limit holds for the call as a whole: a component may hold several
//! core memories (the pool allows four), and together they stay under the limit. No
//! toolchain makes such a component on purpose, so the test writes one with
//! wasm-encoder: `n` core modules, each with a memory of `pages` it fills from its
//! start function, and a typed export `f` returning 0.

use plangate_sandbox::{Epoch, Limits, ModuleSpec, Outcome, Sandbox};
use wasm_encoder::{
    CanonicalOption, CodeSection, ComponentBuilder, ComponentExportKind, ComponentValType,
    ExportKind, ExportSection, Function, FunctionSection, Instruction, MemorySection, MemoryType,
    Module, PrimitiveValType, StartSection, TypeSection, ValType,
};

use crate::support::test_config;

/// A core module with one memory of `pages`, filled with ones when it starts, and an
/// export `f` that returns 0.
fn filled(pages: u64) -> Module {
    let mut types = TypeSection::new();
    types.ty().function([], []);
    types.ty().function([], [ValType::I32]);
    let mut funcs = FunctionSection::new();
    funcs.function(0);
    funcs.function(1);
    let mut memories = MemorySection::new();
    memories.memory(MemoryType {
        minimum: pages,
        maximum: None,
        memory64: false,
        shared: false,
        page_size_log2: None,
    });
    let mut exports = ExportSection::new();
    exports.export("f", ExportKind::Func, 1);
    let mut code = CodeSection::new();
    let mut fill = Function::new([]);
    let bytes = i32::try_from(pages * 65536).expect("fits an i32");
    fill.instruction(&Instruction::I32Const(0))
        .instruction(&Instruction::I32Const(1))
        .instruction(&Instruction::I32Const(bytes))
        .instruction(&Instruction::MemoryFill(0))
        .instruction(&Instruction::End);
    code.function(&fill);
    let mut zero = Function::new([]);
    zero.instruction(&Instruction::I32Const(0))
        .instruction(&Instruction::End);
    code.function(&zero);
    let mut m = Module::new();
    m.section(&types)
        .section(&funcs)
        .section(&memories)
        .section(&exports)
        .section(&StartSection { function_index: 0 })
        .section(&code);
    m
}

/// A component of `n` instances of [`filled`], exporting the first one's `f`.
fn memories(n: usize, pages: u64) -> Vec<u8> {
    let mut c = ComponentBuilder::default();
    let module = c.core_module(None, &filled(pages));
    let instances: Vec<u32> = (0..n)
        .map(|_| c.core_instantiate(None, module, []))
        .collect();
    let core_f = c.core_alias_export(None, instances[0], "f", ExportKind::Func);
    let (ty, mut f) = c.type_function(None);
    f.params([] as [(&str, ComponentValType); 0])
        .result(Some(ComponentValType::Primitive(PrimitiveValType::U32)));
    let lifted = c.lift_func(None, core_f, ty, [] as [CanonicalOption; 0]);
    c.export("f", ComponentExportKind::Func, lifted, None);
    c.finish()
}

fn run(n: usize, pages: u64, memory_mb: u64) -> Outcome {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("memories.wasm");
    std::fs::write(&path, memories(n, pages)).unwrap();
    let epoch = Epoch::builder().module(&path).build().unwrap();
    let sb = Sandbox::new(test_config(), epoch).unwrap();
    let tool = sb.load_tool(&ModuleSpec::new(&path).export("f")).unwrap();
    let limits = Limits {
        memory_mb,
        ..Limits::default()
    };
    let r = sb.call(&tool, b"{}", &limits);
    assert!(
        !matches!(r.outcome, Outcome::Trap { .. }),
        "{:?}: {:?}",
        r.outcome,
        r.detail
    );
    r.outcome
}

#[test]
fn the_memories_of_one_call_together_stay_under_its_limit() {
    // 187.5 MiB each: one fits 200 MiB, three do not.
    assert_eq!(run(1, 3000, 200), Outcome::Exit { code: 0 });
    assert_eq!(run(3, 3000, 200), Outcome::MemoryLimit);
    // Three small ones fit, as any component's few memories do.
    assert_eq!(run(3, 16, 200), Outcome::Exit { code: 0 });
}
