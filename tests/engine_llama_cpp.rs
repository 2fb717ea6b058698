//! llama.cpp, fed exactly what edgeplan prints (scripts/engines/e2e_llama.sh): the pinned
//! llama.cpp (b11312, from the llama-cpp-python 0.3.36 sdist) is built for this CPU and
//! its converter's environment installed (cached outside the clone); this host's
//! `plan --engine llama.cpp --format script`, at both priorities, converts and quantizes
//! a tiny random model and serves it with the emitted flags; tokens come back and the
//! log shows the repacked (or AMX) buffer the plan names; the memory fit matches what
//! llama.cpp reports allocating (weights, KV, compute buffer, each within 5%) for the
//! tiny model at two contexts and a random model with Qwen3-0.6B's real config at two.
//!
//! It fails, never skips, when llama.cpp cannot be built. The one way to leave it out is
//! to say so: `EDGEPLAN_ENGINE_TESTS=0` (a fast local loop; CI never sets it).

#[test]
fn the_emitted_llama_cpp_plan_builds_and_serves() {
    crate::util::engine_end_to_end("e2e_llama.sh", "e2e-llama: ok");
}
