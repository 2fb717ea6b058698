//! A saved `bench --engine` run steers a CPU plan: when the engine's own kernels,
//! timed on this device, say another of its builds is the one to deploy at this
//! priority, the plan takes that build and says why in the trace.
//!
//! Only a run that can speak for this device counts: made by a real engine (not the
//! fake test engine), at the plan's priority, for the plan's engine, on the CPU the
//! profile names. A build with more bits than the rule's choice keeps the rule's choice
//! as its memory fallback (`plan --model` goes back to it when the bigger one does not
//! fit); re-planning for memory never follows a run to a bigger build.

use serde_json::json;

use super::catalog::{Catalog, Engine, PathId};
use super::schema::{Fact, Priority, Step};
use crate::profile::{EngineRun, HardwareClass, Profile};

/// What following a saved run needs.
pub(super) struct Follow<'a> {
    pub profile: &'a Profile,
    pub priority: Priority,
    pub engine: Engine,
    pub route: HardwareClass,
    pub catalog: &'a Catalog,
    /// Re-planning for memory: never follow a run to a bigger build.
    pub memory_first: bool,
}

const SOURCE: &str = "profile.measurements.engines (bench --engine --save)";

impl Follow<'_> {
    /// The path to deploy: `chosen`, or the one the saved run recommends.
    pub fn apply(
        &self,
        chosen: PathId,
        trace: &mut Vec<Step>,
        lost: &mut Vec<(PathId, String)>,
        fallback: &mut Option<PathId>,
    ) -> PathId {
        if !matches!(self.route, HardwareClass::X86Cpu | HardwareClass::Arm64Cpu) {
            return chosen;
        }
        let Some(run) = self.run() else {
            return chosen;
        };
        let Some(rec) = run.verdict.recommended_path.as_deref() else {
            return chosen;
        };
        let reason = run.verdict.reason.as_deref().unwrap_or("no reason saved");
        let step = |outcome: String| Step {
            rule: "measured_engine".into(),
            outcome,
            facts: vec![Fact::new(
                "measurements.engines[].verdict.recommended_path",
                json!(rec),
                format!(
                    "{SOURCE}: {} {} at {}",
                    run.engine,
                    run.version,
                    run.measured_at.as_deref().unwrap_or("an unknown time")
                ),
            )],
        };
        let Some(rec_id) = PathId::for_engine(self.engine)
            .find(|id| self.catalog.try_path(*id).is_some_and(|p| p.name == rec))
        else {
            trace.push(step(format!(
                "the saved {} run recommends {rec}, which is not a {} path of this catalog: ignored",
                run.engine, self.engine
            )));
            return chosen;
        };
        let name = |id: PathId| self.catalog.path(id).name.clone();
        if rec_id == chosen {
            trace.push(step(format!(
                "the saved bench --engine {} run on this device agrees: {reason}",
                run.engine
            )));
            return chosen;
        }
        let bits = |id: PathId| self.catalog.path(id).bits_per_weight.unwrap_or(16.0);
        let bigger = bits(rec_id) > bits(chosen);
        if bigger && self.memory_first {
            trace.push(step(format!(
                "the saved {} run prefers {rec}, which does not fit: keeping {}",
                run.engine,
                name(chosen)
            )));
            return chosen;
        }
        trace.push(step(format!(
            "measured on this device by bench --engine {}: {reason}; so {rec}, not {}",
            run.engine,
            name(chosen)
        )));
        lost.retain(|(id, _)| *id != rec_id);
        let memory = if bigger {
            "; it stays the memory fallback (plan --model takes it when the other does not fit)"
        } else {
            ""
        };
        lost.push((
            chosen,
            format!(
                "slower in {} on this device by the saved bench --engine run{memory}",
                run.engine
            ),
        ));
        *fallback = if bigger {
            Some(chosen)
        } else {
            fallback.filter(|f| *f != rec_id)
        };
        rec_id
    }

    /// The saved run that speaks for this plan, if any.
    fn run(&self) -> Option<&EngineRun> {
        let m = self.profile.measurements.as_ref()?;
        let cpu = self.profile.cpu.model_name.as_deref()?;
        m.engines.iter().find(|r| {
            r.engine == self.engine.as_str()
                && r.executor.as_deref() == Some("real")
                && r.verdict.priority.as_deref() == Some(self.priority.as_str())
                && r.host
                    .as_ref()
                    .and_then(|h| h.cpu_model.as_deref())
                    .is_some_and(|h| h == cpu)
        })
    }
}
