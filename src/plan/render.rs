//! Rendering plans: table (one device, or the fleet view), JSON, JSON Lines, env, args.
//!
//! Every format renders from [`Plan`]; nothing here decides, and no engine's flag or
//! variable is named here: the engine's own rendering (`plan.engine`, made by
//! src/engine/) supplies them. `env` lines are shell-quoted for `eval`; `args` prints
//! the engine's flags ready for `$(...)` (plain tokens by construction). Human output is
//! laid out for `output::width()` (the terminal, `COLUMNS`, or 80): long cells and prose
//! wrap, and the engine's JSON and flags break between keys and between flags, never
//! inside one.

use std::collections::BTreeMap;
use std::io::Write;

use comfy_table::Table;

use super::schema::{Measured, Plan, Target};
use super::{measured, memory};

/// Key-value table rows whose values are made of units that must not break inside
/// (`"key":value,`, `--flag value`, `NAME=value`) arrive as `Units` and are laid out
/// here, one unit per word, to the value column's width; prose is left to the table.
enum Value {
    Text(String),
    Units(Vec<String>),
}

/// Columns a two-column table of this preset spends on borders and padding.
const TWO_COLUMN_FRAME: usize = 7;

/// A two-column key-value table (`header`: the first column's title) fitted to `width`:
/// unit values pre-wrapped to the value column so a flag and its value stay together.
fn key_value_table(header: &str, rows: Vec<(String, Value)>, width: usize) -> Table {
    let key_width = rows
        .iter()
        .map(|(k, _)| crate::output::display_width(k))
        .chain([crate::output::display_width(header)])
        .max()
        .unwrap_or(0);
    let room = width.saturating_sub(key_width + TWO_COLUMN_FRAME).max(10);
    let mut table = crate::output::table_at(width);
    table.set_header(vec![header, ""]);
    for (key, value) in rows {
        let value = match value {
            Value::Text(text) => crate::output::cell(&text),
            Value::Units(units) => {
                let units: Vec<String> = units.iter().map(|u| crate::output::cell(u)).collect();
                crate::output::wrap_units(units.iter().map(String::as_str), room, "", "  ")
                    .join("\n")
            }
        };
        table.add_row(vec![crate::output::cell(&key), value]);
    }
    table
}

/// Words of a command line grouped so a flag keeps its value: `--dtype bfloat16` is
/// one unit, `-m module` another.
fn flag_units<S: AsRef<str>>(words: &[S]) -> Vec<String> {
    let mut units: Vec<String> = Vec::new();
    for word in words.iter().map(AsRef::as_ref) {
        match units.last_mut() {
            Some(last)
                if !word.starts_with('-') && last.starts_with('-') && !last.contains(' ') =>
            {
                last.push(' ');
                last.push_str(word);
            }
            _ => units.push(word.to_string()),
        }
    }
    units
}

/// The kwargs object as JSON broken only between its members: `{"a":1,` `"b":"x"}`
/// (still JSON when pasted: the breaks are whitespace).
fn json_units(value: &serde_json::Value) -> Vec<String> {
    let Some(map) = value.as_object().filter(|m| !m.is_empty()) else {
        return vec![value.to_string()];
    };
    let n = map.len();
    map.iter()
        .enumerate()
        .map(|(i, (k, v))| {
            let open = if i == 0 { "{" } else { "" };
            let close = if i + 1 == n { "}" } else { "," };
            format!("{open}{}:{v}{close}", serde_json::Value::String(k.clone()))
        })
        .collect()
}

/// One bulleted note per item, wrapped with a hanging indent.
fn write_bullets(out: &mut dyn Write, notes: &[String], width: usize) -> anyhow::Result<()> {
    for note in notes {
        out.write_all(crate::output::bullet(note, width).as_bytes())?;
    }
    Ok(())
}

fn yes_no(v: bool) -> &'static str {
    if v { "yes" } else { "no" }
}

/// The engine's flags as one line (`--quantization gptq --dtype bfloat16`), or "".
pub fn engine_flags(plan: &Plan) -> String {
    plan.engine
        .as_ref()
        .map(|e| e.flags.join(" "))
        .unwrap_or_default()
}

/// The engine's environment as `NAME=value` words, or "".
pub fn engine_env(plan: &Plan) -> String {
    plan.engine
        .as_ref()
        .map(|e| e.env_words())
        .unwrap_or_default()
}

/// The engine's serve command (before the model argument), or "".
pub fn engine_command(plan: &Plan) -> String {
    plan.engine
        .as_ref()
        .map(|e| e.command.join(" "))
        .unwrap_or_default()
}

/// `--format json`: one pretty plan object.
pub fn json(out: &mut dyn Write, plan: &Plan) -> anyhow::Result<()> {
    // Serialized first, so a closed pipe surfaces as the plain I/O error `main` expects.
    let mut text = serde_json::to_vec_pretty(plan)?;
    text.push(b'\n');
    out.write_all(&text)?;
    Ok(())
}

/// `--format jsonl`: one compact plan per line.
pub fn jsonl(out: &mut dyn Write, plans: &[Plan]) -> anyhow::Result<()> {
    let mut line = Vec::with_capacity(8 << 10);
    for plan in plans {
        line.clear();
        serde_json::to_writer(&mut line, plan)?;
        line.push(b'\n');
        out.write_all(&line)?;
    }
    Ok(())
}

/// `--format jsonl`: the record for an input that gave no plan (`exit` is the code the
/// run will end with for it), so a consumer of the stream sees every input.
pub fn jsonl_error(
    out: &mut dyn Write,
    source: &str,
    line: Option<usize>,
    error: &str,
    exit: u8,
) -> anyhow::Result<()> {
    #[derive(serde::Serialize)]
    struct ErrorRecord<'a> {
        source: &'a str,
        line: Option<usize>,
        error: &'a str,
        exit: u8,
    }
    let record = ErrorRecord {
        source,
        line,
        error,
        exit,
    };
    let mut text = serde_json::to_vec(&record)?;
    text.push(b'\n');
    out.write_all(&text)?;
    Ok(())
}

/// `--format args`: the engine's flags, nothing at all when there are none.
pub fn args(out: &mut dyn Write, plan: &Plan) -> anyhow::Result<()> {
    let flags = engine_flags(plan);
    if !flags.is_empty() {
        writeln!(out, "{flags}")?;
    }
    Ok(())
}

/// Quotes a value for a POSIX shell: bare when it is a plain token, else single quotes.
pub fn shell_quote(value: &str) -> String {
    // A leading `=` or `~` is expanded by zsh (`=cmd`, `~user`) even in an assignment.
    let plain = !value.is_empty()
        && !value.starts_with(['=', '~'])
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-./:,+=@%".contains(c));
    if plain {
        value.to_string()
    } else {
        format!("'{}'", value.replace('\'', "'\\''"))
    }
}

/// The `EDGEPLAN_*` variables for one plan, in output order.
pub fn env_vars(plan: &Plan) -> Vec<(&'static str, String)> {
    let p = &plan.path;
    let opt = |v: Option<String>| v.unwrap_or_default();
    let mut vars = vec![
        ("EDGEPLAN_DEVICE", opt(plan.device.clone())),
        ("EDGEPLAN_CLASS", plan.hardware_class.as_str().to_string()),
        ("EDGEPLAN_PRIORITY", plan.priority.as_str().to_string()),
        ("EDGEPLAN_PATH", p.name.clone()),
        ("EDGEPLAN_QUANTIZATION", opt(p.quantization.clone())),
        (
            "EDGEPLAN_GROUP_SIZE",
            opt(p.group_size.map(|g| g.to_string())),
        ),
        (
            "EDGEPLAN_BITS_PER_WEIGHT",
            opt(p.bits_per_weight.map(|b| b.to_string())),
        ),
        ("EDGEPLAN_BUILD_WITH", opt(p.build_with.clone())),
        (
            "EDGEPLAN_RUNS_IN_VLLM",
            (if p.runs_in_vllm { "1" } else { "0" }).to_string(),
        ),
        ("EDGEPLAN_VERIFIED", p.verified.as_str().to_string()),
        (
            "EDGEPLAN_ENGINE",
            opt(plan.engine.as_ref().map(|e| e.name.clone())),
        ),
        (
            "EDGEPLAN_ENGINE_PACKAGE",
            opt(plan.engine.as_ref().and_then(|e| e.package.clone())),
        ),
        ("EDGEPLAN_ENGINE_COMMAND", engine_command(plan)),
        ("EDGEPLAN_ENGINE_ARGS", engine_flags(plan)),
        ("EDGEPLAN_ENGINE_ENV", engine_env(plan)),
        ("EDGEPLAN_THREADS", opt(plan.threads.map(|t| t.to_string()))),
        ("EDGEPLAN_CPUS", opt(plan.deploy.cpus.clone())),
        (
            "EDGEPLAN_KV_CACHE_BYTES",
            opt(plan.deploy.kv_cache_bytes.map(|b| b.to_string())),
        ),
        (
            "EDGEPLAN_GGUF_TYPE",
            opt(plan.deploy.weights.gguf_type.clone()),
        ),
    ];
    if let Some(fit) = &plan.memory {
        vars.extend(memory::env_vars(fit));
    }
    vars
}

/// `--format env`: `eval`-able `EDGEPLAN_*=value` lines.
pub fn env(out: &mut dyn Write, plan: &Plan) -> anyhow::Result<()> {
    for (key, value) in env_vars(plan) {
        writeln!(out, "{key}={}", shell_quote(&value))?;
    }
    Ok(())
}

/// The quantization row: a GGUF type, or the checkpoint's format and group.
fn quantization_cell(plan: &Plan) -> String {
    let p = &plan.path;
    match (
        &plan.deploy.weights.gguf_type,
        &p.quantization,
        p.group_size,
    ) {
        (Some(t), _, _) => format!("GGUF {t}"),
        (None, Some(q), Some(g)) => format!("{q}, group {g}"),
        (None, Some(q), None) => q.clone(),
        (None, None, _) => "none".into(),
    }
}

/// The one-device table's rows: the path, the engine's rendering, threads and KV.
fn summary_rows(plan: &Plan) -> anyhow::Result<Vec<(String, Value)>> {
    let p = &plan.path;
    let text = |k: &str, v: String| (k.to_string(), Value::Text(v));
    let bits = p
        .bits_per_weight
        .map(|b| format!("{b}"))
        .unwrap_or_else(|| "unknown".into());
    let mut rows = vec![
        text("class", plan.hardware_class.to_string()),
        text("priority", plan.priority.as_str().into()),
        text("path", p.name.clone()),
        text("quantization", quantization_cell(plan)),
        text("bits per weight", bits),
        text("runs in vLLM", yes_no(p.runs_in_vllm).into()),
        text("verified", format!("{} (basis below)", p.verified.as_str())),
        text(
            "kernel",
            serde_json::to_value(plan.deploy.kernel)?
                .as_str()
                .unwrap_or("?")
                .to_string(),
        ),
        text("activations", plan.deploy.activations.as_str().to_string()),
    ];
    rows.extend(engine_rows(plan)?);
    rows.extend([
        text(
            "build with",
            p.build_with
                .clone()
                .unwrap_or_else(|| "none (use the checkpoint as is)".into()),
        ),
        text("fused CPU norms", yes_no(p.fused_cpu_norms).into()),
        text(
            "threads",
            match (plan.threads, &plan.deploy.cpus, plan.deploy.target) {
                (Some(t), _, Target::Gpu) => format!("{t} (the host's; the model runs on the GPU)"),
                (Some(t), Some(c), _) => format!("{t} on CPUs {c}"),
                (Some(t), None, _) => format!("{t} (CPU list unknown)"),
                (None, _, _) => "unknown".into(),
            },
        ),
        text(
            "KV cache",
            // The source can be long; the JSON and --explain carry it.
            match (plan.deploy.kv_cache_bytes, &plan.deploy.weights.gguf_type) {
                (Some(b), _) => crate::output::gib_exact(b),
                (None, Some(_)) => "sized by the context (--ctx-size)".into(),
                (None, None) => "none".into(),
            },
        ),
    ]);
    Ok(rows)
}

/// The engine's rows: which engine, then the kwargs JSON, the flags, the environment
/// and the serve command, each in its own row, broken between members, flags and words.
fn engine_rows(plan: &Plan) -> anyhow::Result<Vec<(String, Value)>> {
    let text = |k: &str, v: String| (k.to_string(), Value::Text(v));
    let engine = match &plan.engine {
        Some(e) if e.runs => format!(
            "{} ({}; checked against {})",
            e.name,
            e.package.as_deref().unwrap_or("-"),
            e.checked_against.join(", ")
        ),
        Some(e) => format!("{}: does not run this path", e.name),
        None => "not rendered".into(),
    };
    let (flags, command) = plan
        .engine
        .as_ref()
        .map(|e| (e.flags.clone(), e.command.clone()))
        .unwrap_or_default();
    let env: Vec<String> = engine_env(plan)
        .split_whitespace()
        .map(String::from)
        .collect();
    let mut rows = vec![
        text("engine", engine),
        (
            "engine kwargs".into(),
            Value::Units(json_units(&serde_json::to_value(&plan.engine_kwargs)?)),
        ),
    ];
    if !flags.is_empty() {
        rows.push(("engine flags".into(), Value::Units(flag_units(&flags))));
    }
    rows.push(if env.is_empty() {
        text("engine env", "none".into())
    } else {
        ("engine env".into(), Value::Units(env))
    });
    rows.push(if command.is_empty() {
        text("serve with", "none".into())
    } else {
        let words: Vec<&str> = command
            .iter()
            .map(String::as_str)
            .chain(["MODEL"])
            .chain(flags.iter().map(String::as_str))
            .collect();
        ("serve with".into(), Value::Units(flag_units(&words)))
    });
    Ok(rows)
}

/// `--format table` for one device: the path, kwargs, build script, rationale, notes,
/// laid out for `output::width()`.
pub fn table_one(out: &mut dyn Write, plan: &Plan, explain: bool) -> anyhow::Result<()> {
    table_one_at(out, plan, explain, crate::output::width())
}

/// [`table_one`] at `width` columns.
pub fn table_one_at(
    out: &mut dyn Write,
    plan: &Plan,
    explain: bool,
    width: usize,
) -> anyhow::Result<()> {
    let p = &plan.path;
    let mut rows = Vec::new();
    if let Some(device) = &plan.device {
        rows.push(("device".to_string(), Value::Text(device.clone())));
    }
    rows.extend(summary_rows(plan)?);
    writeln!(out, "{}", key_value_table("plan", rows, width))?;
    if let Some(fit) = &plan.memory {
        let rows = memory::rows(fit)
            .into_iter()
            .map(|(k, v)| (k, Value::Text(v)))
            .collect();
        writeln!(out, "\n{}", key_value_table("memory", rows, width))?;
        write_bullets(out, &fit.notes, width)?;
    }
    if let Some(m) = &plan.measured {
        write_measured(out, m, width)?;
    }
    let wrapped = |text: &str, lead: &str| crate::output::wrapped(text, width, lead, "  ");
    write!(out, "\n{}", wrapped(&p.rationale, "Why: "))?;
    let verified = format!("Verified ({}): ", p.verified.as_str());
    write!(out, "\n{}", wrapped(&p.verified_basis, &verified))?;
    if !p.notes.is_empty() {
        writeln!(out, "\nNotes:")?;
        let shown: Vec<String> = p.notes.iter().map(|n| n.shown()).collect();
        write_bullets(out, &shown, width)?;
    }
    if let Some(e) = plan.engine.as_ref().filter(|e| !e.notes.is_empty()) {
        writeln!(out, "\nEngine ({}):", crate::output::cell(&e.name))?;
        write_bullets(out, &e.notes, width)?;
    }
    if explain {
        write_explain_at(out, plan, width)?;
    }
    Ok(())
}

/// The "measured by bench" section (on the host named under the table): the saved bench figures per path, then what
/// they mean for this plan (a contradiction in capitals).
fn write_measured(out: &mut dyn Write, m: &Measured, width: usize) -> anyhow::Result<()> {
    let num = |v: Option<f64>, digits: usize| v.map_or("-".into(), |v| format!("{v:.digits$}"));
    let mut table = crate::output::table_at(width);
    table.set_header(vec![
        "path", "kernel", "tok/s", "ms/step", "GB/s", "prefill", "rel err", "top-1",
    ]);
    for p in &m.paths {
        let mut name = crate::output::cell(&p.path);
        if m.plan_bench_path.as_deref() == Some(p.path.as_str()) {
            name.push_str(" *");
        }
        table.add_row(vec![
            name,
            crate::output::cell(p.decode_kernel.as_deref().unwrap_or("-")),
            num(p.decode_tokens_per_s, 1),
            num(p.decode_step_ms, 3),
            num(p.decode_weight_gbps, 1),
            num(p.prefill_tokens_per_s, 1),
            num(p.rel_error, 4),
            num(p.top1_agreement.map(|t| t * 100.0), 1) + "%",
        ]);
    }
    let caption = "Measured by bench (* this plan's path): decode kernel, tok/s, ms/step and GB/s; prefill tok/s; fidelity (relative error, top-1 agreement)";
    write!(
        out,
        "\n{}",
        crate::output::wrapped(caption, width, "", "  ")
    )?;
    writeln!(out, "{table}")?;
    let executor = match m.executor.as_deref() {
        Some("fake") => "fake executor: simulated figures, not measurements".to_string(),
        Some(e) => format!("{e} executor"),
        None => "executor unknown".into(),
    };
    let lines = [
        format!(
            "bench run: {}, {} threads, {} GB/s read bandwidth ({executor})",
            m.model.as_deref().unwrap_or("unknown model"),
            m.threads.map_or("?".into(), |t| t.to_string()),
            num(m.memory_bandwidth_gbps, 1),
        ),
        measured::provenance(m),
        format!(
            "bench verdict: {} at priority {}: {}",
            m.bench_planned.as_deref().unwrap_or("no plan"),
            m.bench_priority.as_deref().unwrap_or("unknown"),
            m.bench_verdict.as_deref().unwrap_or("missing"),
        ),
        if m.contradicts_plan {
            format!("MEASUREMENTS CONTRADICT THIS PLAN: {}", m.reason)
        } else {
            m.reason.clone()
        },
    ];
    write_bullets(out, &lines, width)
}

/// The fleet view's `measured` cell: what a saved bench run says about the plan.
fn measured_cell(m: Option<&Measured>) -> &'static str {
    match m {
        None => "no",
        Some(m) if m.contradicts_plan => "CONTRADICTS",
        Some(m) if m.confirms_plan => "confirms",
        Some(m) if !m.applies => "other plan",
        Some(_) => "inconclusive",
    }
}

/// The rule trace and the alternatives, as indented text wrapped to `width` columns.
fn write_explain_at(out: &mut dyn Write, plan: &Plan, width: usize) -> anyhow::Result<()> {
    let wrapped = crate::output::wrapped;
    writeln!(out, "\nRule trace:")?;
    for (i, step) in plan.explain.iter().enumerate() {
        let lead = format!("  {}. ", i + 1);
        let line = format!("{}: {}", step.rule, step.outcome);
        out.write_all(wrapped(&line, width, &lead, "     ").as_bytes())?;
        for fact in &step.facts {
            // `field = value  [source]`: the two spaces before the source kept, the source
            // one unit (on the next line whole when it does not fit).
            // An object value breaks between its members, as the kwargs do.
            let mut units = vec![crate::output::cell(&fact.field), "=".to_string()];
            match &fact.value {
                serde_json::Value::Object(_) => units.extend(json_units(&fact.value)),
                v => units.extend(
                    crate::output::cell(&v.to_string())
                        .split_whitespace()
                        .map(String::from),
                ),
            }
            let units: Vec<String> = units.iter().map(|u| crate::output::cell(u)).collect();
            let source = crate::output::cell(&format!("[{}]", fact.source));
            let mut units = units;
            units.push(format!(" {source}"));
            let lines = crate::output::wrap_units(
                units.iter().map(String::as_str),
                width,
                "       ",
                "         ",
            );
            writeln!(out, "{}", lines.join("\n"))?;
        }
    }
    writeln!(out, "\nAlternatives that lost:")?;
    let lost: Vec<String> = plan
        .alternatives
        .iter()
        .map(|alt| format!("{}: {}", alt.path, alt.reason))
        .collect();
    write_bullets(out, &lost, width)
}

/// The fleet view, built one plan at a time so a large fleet is never held in memory
/// as whole plans: one short row per device (device, class, path, verified, and what a
/// saved bench run says when any device has one); with `--model`, a second table of the
/// memory fit per device; then one row per path with what every device on it shares
/// (quantization, build), said once instead of on every row.
pub struct FleetTable {
    rows: Vec<FleetRow>,
    paths: BTreeMap<String, PathSummary>,
    /// The rule traces, already rendered, when `--explain` was given.
    traces: Option<Vec<u8>>,
    /// Whether the memory-fit table is shown.
    memory: bool,
    width: usize,
}

/// One device's short row, its cells escaped.
struct FleetRow {
    cells: [String; 4],
    measured: &'static str,
    memory: [String; 4],
}

/// The footer's row for one path: how many devices, and its shared facts.
struct PathSummary {
    devices: usize,
    quantization: String,
    build_with: String,
}

impl FleetTable {
    pub fn new(explain: bool, memory: bool) -> FleetTable {
        FleetTable::at(explain, memory, crate::output::width())
    }

    /// [`FleetTable::new`] laid out for `width` columns.
    pub fn at(explain: bool, memory: bool, width: usize) -> FleetTable {
        FleetTable {
            rows: Vec::new(),
            paths: BTreeMap::new(),
            traces: explain.then(Vec::new),
            memory,
            width,
        }
    }

    /// Adds one device's row (and its trace, with `--explain`).
    pub fn add(&mut self, plan: &Plan) -> anyhow::Result<()> {
        let p = &plan.path;
        self.paths
            .entry(p.name.clone())
            .or_insert_with(|| PathSummary {
                devices: 0,
                quantization: quantization_cell(plan),
                build_with: p.build_with.clone().unwrap_or_else(|| "none".into()),
            })
            .devices += 1;
        // A label is one line: a newline in it cannot forge a row or a heading.
        let device = crate::output::cell(plan.device.as_deref().unwrap_or("-"));
        self.rows.push(FleetRow {
            cells: [
                device.clone(),
                plan.hardware_class.as_str().to_string(),
                crate::output::cell(&p.name),
                p.verified.as_str().to_string(),
            ],
            measured: measured_cell(plan.measured.as_ref()),
            memory: fleet_memory_cells(plan.memory.as_ref()),
        });
        if let Some(traces) = &mut self.traces {
            let heading = format!("## {device}: {}", p.name);
            let heading = crate::output::wrapped(&heading, self.width, "", "   ");
            write!(traces, "\n{heading}")?;
            write_explain_at(traces, plan, self.width)?;
        }
        Ok(())
    }

    /// Writes the devices, their memory fit (with `--model`), the per-path summary and
    /// any traces.
    pub fn finish(self, out: &mut dyn Write) -> anyhow::Result<()> {
        let any_measured = self.rows.iter().any(|r| r.measured != "no");
        let mut devices = crate::output::table_at(self.width);
        let mut header = vec!["device", "class", "path", "verified"];
        if any_measured {
            header.push("measured");
        }
        devices.set_header(header);
        for row in &self.rows {
            let mut cells = row.cells.to_vec();
            if any_measured {
                cells.push(row.measured.to_string());
            }
            devices.add_row(cells);
        }
        writeln!(out, "{devices}\n")?;
        if self.memory {
            let mut fit = crate::output::table_at(self.width);
            fit.set_header(vec![
                "device",
                "fits",
                "max context",
                "need GiB",
                "budget GiB",
            ]);
            for row in &self.rows {
                let mut cells = vec![row.cells[0].clone()];
                cells.extend(row.memory.iter().cloned());
                fit.add_row(cells);
            }
            writeln!(out, "{fit}\n")?;
        }
        let mut summary = crate::output::table_at(self.width);
        summary.set_header(vec!["path", "devices", "quantization", "build with"]);
        for (path, s) in &self.paths {
            summary.add_row(vec![
                crate::output::cell(path),
                s.devices.to_string(),
                crate::output::cell(&s.quantization),
                crate::output::cell(&s.build_with),
            ]);
        }
        writeln!(out, "{summary}")?;
        if let Some(traces) = self.traces {
            out.write_all(&traces)?;
        }
        Ok(())
    }
}

/// The fleet view's memory cells: fits, max context, need, budget.
fn fleet_memory_cells(fit: Option<&memory::MemoryFit>) -> [String; 4] {
    let Some(fit) = fit else {
        return ["-", "-", "-", "-"].map(str::to_string);
    };
    let gib = crate::output::gib_number;
    [
        match fit.fits {
            Some(true) => "yes".into(),
            Some(false) => "NO".into(),
            None => "unknown".into(),
        },
        fit.max_context
            .map(|c| c.to_string())
            .unwrap_or_else(|| "unknown".into()),
        gib(fit
            .weights_bytes
            .saturating_add(fit.kv_engine_bytes.unwrap_or(fit.kv_bytes))),
        fit.budget_bytes
            .map(gib)
            .unwrap_or_else(|| "unknown".into()),
    ]
}

#[cfg(test)]
/// `--format table` for many devices, from plans already made.
pub fn table_fleet(out: &mut dyn Write, plans: &[Plan], explain: bool) -> anyhow::Result<()> {
    let mut fleet = FleetTable::new(explain, plans.iter().any(|p| p.memory.is_some()));
    for plan in plans {
        fleet.add(plan)?;
    }
    fleet.finish(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::catalog::Catalog;
    use crate::plan::rules::decide;
    use crate::plan::schema::Priority;
    use crate::profile::{HardwareClass, Profile};

    fn plan(class: HardwareClass, flags: &[&str]) -> Plan {
        let mut p = Profile::from_json(
            r#"{"schema_version": 1, "tool": {"name": "edgeplan", "version": "0"},
                "arch": "x86_64", "hardware_class": "x86_cpu", "supports_bf16": true,
                "cpu": {"vendor": null, "model_name": null, "logical_cpus": 8, "usable_threads": 6,
                        "flags": [], "features": {}},
                "memory": {"total_bytes": null, "available_bytes": null, "limit_bytes": null}}"#,
            "t",
        )
        .unwrap();
        p.hardware_class = class;
        p.label = Some("box 1".into());
        p.cpu.flags = flags.iter().map(|s| s.to_string()).collect();
        decide(&p, Priority::Speed, &Catalog::builtin())
    }

    #[test]
    fn shell_quoting_survives_quotes_and_spaces() {
        assert_eq!(shell_quote("w4a8-amx"), "w4a8-amx");
        assert_eq!(shell_quote(""), "''");
        assert_eq!(shell_quote("box 1"), "'box 1'");
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
        assert_eq!(shell_quote("$(rm -rf /)"), "'$(rm -rf /)'");
        assert_eq!(shell_quote("=ls"), "'=ls'", "zsh expands a leading =");
        assert_eq!(shell_quote("a=b"), "a=b");
    }

    /// A rendering made by hand: render prints what the engine gave, verbatim.
    fn rendered(mut plan: Plan, flags: &[&str], env: &[(&str, &str)]) -> Plan {
        plan.engine = Some(crate::plan::schema::EngineRendering {
            name: "someengine".into(),
            checked_against: vec!["someengine 1.0".into()],
            runs: !flags.is_empty(),
            package: Some("someengine==1.0".into()),
            command: vec!["serve-it".into(), "now".into()],
            flags: flags.iter().map(|s| s.to_string()).collect(),
            env: env
                .iter()
                .map(|(n, v)| crate::plan::schema::EnvVar {
                    name: n.to_string(),
                    value: v.to_string(),
                })
                .collect(),
            notes: Vec::new(),
        });
        plan
    }

    #[test]
    fn args_are_the_engines_flags_or_nothing() {
        let mut out = Vec::new();
        let p = rendered(
            plan(HardwareClass::X86Cpu, &["amx_tile", "amx_int8"]),
            &["--quantization", "gptq", "--dtype", "bfloat16"],
            &[],
        );
        args(&mut out, &p).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "--quantization gptq --dtype bfloat16\n"
        );
        let mut out = Vec::new();
        args(&mut out, &plan(HardwareClass::CudaDiscrete, &[])).unwrap();
        assert!(out.is_empty(), "no rendering, no flags");
    }

    #[test]
    fn env_lines_are_exact() {
        let mut out = Vec::new();
        let p = rendered(
            plan(HardwareClass::X86Cpu, &[]),
            &["--a", "1", "--b", "x"],
            &[("SOME_VAR", "0"), ("OTHER", "0-5")],
        );
        env(&mut out, &p).unwrap();
        let text = String::from_utf8(out).unwrap();
        let want = "EDGEPLAN_DEVICE='box 1'\nEDGEPLAN_CLASS=x86_cpu\nEDGEPLAN_PRIORITY=speed\n\
EDGEPLAN_PATH=w4a16\nEDGEPLAN_QUANTIZATION=gptq\nEDGEPLAN_GROUP_SIZE=128\n\
EDGEPLAN_BITS_PER_WEIGHT=4.25\nEDGEPLAN_BUILD_WITH='edgeplan plan --format script (GPTQModel: 4-bit GPTQ, group 128, symmetric)'\n\
EDGEPLAN_RUNS_IN_VLLM=1\nEDGEPLAN_VERIFIED=inferred\nEDGEPLAN_ENGINE=someengine\n\
EDGEPLAN_ENGINE_PACKAGE=someengine==1.0\nEDGEPLAN_ENGINE_COMMAND='serve-it now'\n\
EDGEPLAN_ENGINE_ARGS='--a 1 --b x'\nEDGEPLAN_ENGINE_ENV='SOME_VAR=0 OTHER=0-5'\nEDGEPLAN_THREADS=6\n\
EDGEPLAN_CPUS=''\nEDGEPLAN_KV_CACHE_BYTES=4294967296\nEDGEPLAN_GGUF_TYPE=''\n";
        assert_eq!(text, want);
    }

    #[test]
    fn fleet_table_counts_paths() {
        let plans = vec![
            plan(HardwareClass::X86Cpu, &[]),
            plan(HardwareClass::X86Cpu, &[]),
            plan(HardwareClass::CudaDiscrete, &[]),
        ];
        let mut out = Vec::new();
        table_fleet(&mut out, &plans, false).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("| w4a16 | 2       |"), "{text}");
        assert!(text.contains("| bf16  | 1       |"), "{text}");
    }
}
