"""The printer: a run's results (``latest.json``) as ``latest.md``, a table or two per measurement.

``render_markdown`` prints the head, the goals, then the sections of ``PAGE`` whose measurement ran (a
heading, what its printer prints under it, or ``Not run: ...`` for a measurement that failed) and last
the measurements that failed. A printer gets its measurement's result and the run's ``meta`` (versions,
for the labels). Nothing is measured here: a results file can be printed again (``tests/bench`` does).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bench.envs import PEERS
from bench.measurements.calls import CALL_IMPLS
from bench.measurements.cold import OURS_COLD
from bench.measurements.otel import OTEL_MODES

Result = dict[str, Any]  # one measurement's result, as in latest.json
Meta = dict[str, Any]  # the run: date, machine, versions, ...
Heading = str | Callable[[Result], str]
Printer = Callable[[Result, Meta], list[str]]  # what stands under the heading

LABELS = {
    "python": "bare `python -c pass`",
    "python (peers venv)": "bare `python -c pass` (comparison venv)",
    "floor": "floor: urllib3 + msgspec",
    "floor-json": "urllib3 + json.loads (untyped)",
    "ours": "**workers-ai (ours)**",
    "ours-3-models": "**workers-ai, 3 models, `--strict`, dev venv (numpy, aiohttp, pydantic)**",
    "cloudflare": "cloudflare (official)",
    "openai": "openai",
}


def render_markdown(results: dict[str, Any]) -> str:
    meta = results["meta"]
    lines = _head(meta) + _goals(results["goals"])
    for name, heading, printer in PAGE:
        result = results.get(name)
        if result:
            title = heading if isinstance(heading, str) else heading(result)
            body = [f"Not run: {result['error']}"] if "error" in result else printer(result, meta)
            lines += [f"## {title}", "", *body, ""]
    lines += _failed(results.get("errors") or {})
    return "\n".join(lines)


def _head(meta: Meta) -> list[str]:
    return [
        "# Benchmarks",
        "",
        f"Measured {meta['date']} on {meta['machine']} ({meta['cores']} cores), Python {meta['python']}; "
        f"total run {meta['total_s']:.0f} s; 1-minute load average {meta['load_average'][0]} at the start and "
        f"{meta['load_average'][1]} at the end (other work on the machine makes single samples noisy, hence "
        "interleaved rounds and paired ratios). Produced by `make bench` (bench/run.py); raw numbers in "
        "`latest.json`. Client CPU is `time.process_time()` in the client process; the server always runs "
        "in another process. Medians throughout.",
        "",
    ]


def _goals(goals: list[dict[str, Any]]) -> list[str]:
    lines = ["## Goals", "", "| Goal | Target | Measured | Met |", "|---|---|---|---|"]
    for g in goals:
        met = "n/a" if g["met"] is None else ("yes" if g["met"] else "**no**")
        lines.append(f"| {g['goal']} | {g['target']} | {g['measured'] or 'not measured'} | {met} |")
    return [*lines, ""]


def _failed(errors: dict[str, str]) -> list[str]:
    if not errors:
        return []
    return ["## Sections that failed", "", *(f"- {name}: {message}" for name, message in errors.items()), ""]


def _label(impl: str, envs_meta: Meta) -> str:
    label = LABELS.get(impl, impl)
    version = envs_meta.get("versions", {}).get(impl)
    return f"{label} {version}" if version and impl in PEERS else label


def _fmt(value: float | None, spec: str = "{:.2f}", missing: str = "n/a") -> str:
    return missing if value is None else spec.format(value)


def _us(value: float) -> str:
    return f"{value / 1000:.2f} ms" if value >= 1000 else f"{value:.0f} us"


def _cold(cold: Result, meta: Meta) -> list[str]:
    lines: list[str] = []
    w = lines.append
    rows = cold["rows"]
    w(
        f"A fresh `python -c` per sample, {cold['repeats']} rounds with one sample per case each; wall time "
        "of the whole process and its CPU time (user + system, from `wait4`); ratios are medians of the "
        "per-round ratios (in brackets: their middle half, 25th-75th percentile). Ours: "
        f"`{OURS_COLD}`, installed as {cold['ours_env']}. Official SDK: `Cloudflare(...)` and "
        "`c.ai.run` resolved; openai: `OpenAI(...)` and `c.embeddings.create` resolved."
    )
    w("")
    beyond = cold.get("ours_beyond_floor") or []
    if beyond:
        top = ", ".join(f"`{r['module']}` {r['self_us'] / 1000:.1f}" for r in beyond[:6])
        w(f"What ours imports beyond the floor, largest self time first (`-X importtime`, ms, one run): {top}.")
        w("")
    w(
        "| Case | Wall ms (median) | Wall ms (min) | CPU ms (median) | Modules loaded | vs floor (wall) | "
        "vs floor (CPU) | vs official SDK (wall) |"
    )
    w("|---|---|---|---|---|---|---|---|")
    for impl in ["python", "python (peers venv)", "floor", "ours", "cloudflare", "openai"]:
        row = rows.get(impl)
        if row is None:
            continue
        if "error" in row:
            w(f"| {_label(impl, meta)} | not run: {row['error']} | | | | | | |")
            continue
        vs_floor = row.get("vs_floor")
        vs_cf = row.get("vs_official")
        iqr = row.get("vs_floor_iqr")
        shown = _fmt(vs_floor, "{:.2f}x") + (f" ({iqr[0]:.2f}-{iqr[1]:.2f})" if iqr else "")
        w(
            f"| {_label(impl, meta)} | {row['ms']:.1f} | {row['min_ms']:.1f} | {row['cpu_ms']:.1f} | "
            f"{row['modules']} | {shown} | {_fmt(row.get('vs_floor_cpu'), '{:.2f}x')} | "
            f"{_fmt(vs_cf, '{:.2f}x')} |"
        )
    return lines


def _calls_small(calls: Result, meta: Meta) -> list[str]:
    size = calls.get("reply_bytes", {}).get("small", 0)
    blurb = (
        f"bge-m3 rank (query + 3 contexts; a {size}-byte reply) over keep-alive loopback. "
        "The openai SDK has no rank route; its row is `embeddings.create` on `/ai/v1/embeddings` for "
        "3 inputs x 4 dimensions, the nearest small reply. The official SDK needs `extra_body` for "
        "query/contexts (and `text=omit` to pass its required-argument check)."
    )
    return _calls_case(calls, "small", blurb, meta)


def _calls_big(calls: Result, meta: Meta) -> list[str]:
    sizes = calls.get("reply_bytes", {})
    blurb = (
        f"A {sizes.get('big', 0) / 1e6:.1f} MB reply decoded per call. Floor: urllib3 + "
        "`msgspec.json.decode(type=Envelope[Embedding])`. Ours: `bge.embed(text=[...100])` -> "
        "`EmbeddingOutput`. Official SDK: untyped `dict`. openai: `embeddings.create` -> pydantic "
        f"`CreateEmbeddingResponse` (OpenAI-shaped reply with the same floats, "
        f"{sizes.get('openai_big', 0) / 1e6:.1f} MB)."
    )
    return _calls_case(calls, "big", blurb, meta)


def _calls_case(calls: Result, case: str, blurb: str, meta: Meta) -> list[str]:
    lines: list[str] = []
    w = lines.append
    rows = calls.get(case, {})
    w(blurb)
    w("")
    w(
        "Ratios are medians of per-round ratios to the floor measured in the same process "
        f"({calls.get('passes', 1)} processes per environment, {calls.get('rounds', 0)} rounds each); "
        "the spread is the middle half of those per-round ratios (25th-75th percentile)."
    )
    w("")
    w("| Client | Client CPU per call | Wall per call | vs floor | spread | vs official SDK | Result |")
    w("|---|---|---|---|---|---|---|")
    for impl in CALL_IMPLS:
        row = rows.get(impl)
        if row is None:
            continue
        if "error" in row:
            w(f"| {_label(impl, meta)} | not run: {row['error'][:160]} | | | | | |")
            continue
        vs_floor = row.get("vs_floor")
        vs_cf = row.get("vs_official")
        iqr = row.get("vs_floor_iqr")
        spread = f"{iqr[0]:.2f}-{iqr[1]:.2f}x" if iqr else "n/a"
        w(
            f"| {_label(impl, meta)} | {_us(row['cpu_us'])} | {_us(row['wall_us'])} | "
            f"{_fmt(vs_floor, '{:.2f}x')} | {spread} | {_fmt(vs_cf, '{:.2f}x')} | {row['result']} |"
        )
    return lines


def _bulk_queue(queue: Result, meta: Meta) -> list[str]:
    lines: list[str] = []
    w = lines.append
    w(
        "Text-generation requests through the emulator's batch queue (another process, answering at once), "
        "1000 per batch. Floor: the same JSON posted and polled with plain urllib3 + msgspec."
    )
    w("")
    w("| Run | Client CPU | CPU per item | vs floor | Peak RSS | vs floor | Wall |")
    w("|---|---|---|---|---|---|---|")
    for mode, r in queue["runs"].items():
        w(
            f"| {mode} | {r['cpu_s']:.2f} s | {r['cpu_us_per_item']:.1f} us | {r['cpu_vs_floor']:.2f}x | "
            f"{r['peak_rss_mb']:.0f} MB | {r['peak_rss_vs_floor']:.2f}x | {r['wall_s']:.1f} s |"
        )
    small = queue["cli_journal_at_n_over_10"]
    w("")
    w(
        f"Journal CPU cost: {queue['journal_cpu_cost']:.3f}x (batch_many), "
        f"{queue['cli_journal_cpu_cost']:.3f}x (CLI). CLI peak RSS at {small['n']:,} requests: "
        f"{small['peak_rss_mb']:.0f} MB; at "
        f"{queue['requests']:,}: {queue['cli_peak_rss_n_vs_n_over_10']:.2f}x that."
    )
    return lines


def _batch(batch: Result, meta: Meta) -> list[str]:
    lines: list[str] = []
    w = lines.append
    w(
        f"{batch['texts']:,} texts through `{batch['api']}` against `workers_ai.testing.Emulator` in "
        f"another process ({batch.get('emulator_settings', '')}). {batch.get('note', '')}"
    )
    w("")
    w(
        "| Client CPU | Wall | CPU per text | Peak RSS (client) | RSS before the run | "
        "Vectors | Vectors alone as Python lists |"
    )
    w("|---|---|---|---|---|---|---|")
    w(
        f"| {batch['cpu_s']:.2f} s | {batch['wall_s']:.2f} s | "
        f"{batch['cpu_s'] / batch['texts'] * 1e6:.0f} us | "
        f"{batch['peak_rss_mb']:.0f} MB | {batch['base_rss_mb']:.0f} MB | "
        f"{batch['vectors']:,} x {batch['dims']} | "
        f"{batch.get('vectors_mb', 0):.0f} MB |"
    )
    num = batch.get("numpy") or {}
    if "peak_rss_mb" in num:
        w(
            f"| {num['cpu_s']:.2f} s | {num['wall_s']:.2f} s | "
            f"{num['cpu_s'] / num['texts'] * 1e6:.0f} us | "
            f"{num['peak_rss_mb']:.0f} MB | {num['base_rss_mb']:.0f} MB | "
            f"{num['vectors']:,} x {num['dims']} (`as_numpy=True`) | "
            f"{num.get('vectors_mb', 0):.0f} MB as float32 |"
        )
    elif num:
        w(f"\n`as_numpy=True` not run: {num.get('error')}")
    ray_row = batch.get("ray") or {}
    w("")
    if "ray_wall_s" in ray_row:
        w("| Path | Wall | Vectors/s |")
        w("|---|---|---|")
        w(f"| {ray_row['single_api']} | {ray_row['single_wall_s']:.2f} s | {ray_row['single_vps']:.0f} |")
        w(f"| {ray_row['ray_api']} | {ray_row['ray_wall_s']:.2f} s | {ray_row['ray_vps']:.0f} |")
        w("")
        w(
            f"Ray start-up ({ray_row['ray_init_s']:.1f} s for `ray.init`) is not in the Ray wall time; "
            f"actor start-up is. Same vectors: {ray_row['same_vectors']}. Both paths are bound by the "
            "emulator computing the vectors on the same 2 cores."
        )
    elif ray_row:
        w(f"Ray not run: {ray_row.get('error')}")
    return lines


def _sse(sse: Result, meta: Meta) -> list[str]:
    lines: list[str] = []
    w = lines.append
    r = sse["results"]
    w(
        f"A seeded {sse['bytes'] / 1e6:.1f} MB text-generation stream ({r['ours_framing']['events']:,} "
        f"events) fed in {sse['chunks']:,} seeded random-size chunks (1 B to 8 KiB). CPU-bound, no socket."
    )
    w("")
    w("| Parser | MB/s | vs floor |")
    w("|---|---|---|")
    w(f"| floor: `bytes.split(b'\\n')` + `startswith(b'data: ')` | {r['floor_framing']['mb_per_s']:.0f} | 1.00x |")
    w(
        f"| ours: `SSEDecoder` (full SSE framing: CR/LF/CRLF, comments, multi-line data, ids) | "
        f"{r['ours_framing']['mb_per_s']:.0f} | "
        f"{r['ours_framing']['mb_per_s'] / r['floor_framing']['mb_per_s']:.2f}x |"
    )
    w(f"| floor + `msgspec.json.decode` per event | {r['floor_events']['mb_per_s']:.0f} | 1.00x |")
    w(
        f"| ours: `EventStream` -> typed `StreamEvent`s | {r['ours_events']['mb_per_s']:.0f} | "
        f"{r['ours_events']['mb_per_s'] / r['floor_events']['mb_per_s']:.2f}x |"
    )
    return lines


def _emulator(emulator: Result, meta: Meta) -> list[str]:
    lines: list[str] = []
    w = lines.append
    w(
        f"{emulator['threads']} client threads in another process, one `urllib3.PoolManager(maxsize=64)`, "
        "against `workers_ai.testing.Emulator` (8 workers); floor: the same rank against "
        "`bench/_server.py`, which only returns cached bytes (`bench/_emulator.py`)."
    )
    w("")
    w("| Workload | calls/s | errors |")
    w("|---|---|---|")
    for key, label in (
        ("rank", "bge-m3 rank, 3 contexts"),
        ("embed", "bge-m3 embeddings, 2 x 1024"),
        ("chat", "llama-3.1-8b chat reply"),
        ("floor_rank", "floor: the rank as cached bytes"),
    ):
        row = emulator[key]
        w(f"| {label} | {row['calls_per_s']:,.0f} | {row['errors']:.0f} |")
    w("")
    w(f"Rank vs floor: {emulator['rank_vs_floor']:.2f}x.")
    return lines


def _load(load: Result, meta: Meta) -> list[str]:
    lines: list[str] = []
    w = lines.append
    st, th = load["stream"], load["threads"]
    w(
        "Over HTTP against `bench/_server.py` in another process; each row is a ratio to the floor "
        "measured in the same process, samples interleaved (`bench/_load.py`)."
    )
    w("")
    w("| Row | Floor | Ours | Ours / floor |")
    w("|---|---|---|---|")
    w(
        f"| {st['events']['ours'] - 1:,} typed SSE events + usage: client CPU "
        f"(floor: urllib3 `read1` + split on blank lines + msgspec typed decode) | "
        f"{st['floor_s'] * 1e3:.2f} ms | {st['ours_s'] * 1e3:.2f} ms | {st['ratio']:.2f}x |"
    )
    w(
        f"| {th['threads']} threads, 20 ms per reply: calls/s (floor: `PoolManager(maxsize=64)` + msgspec; "
        f"ours: default `WorkersAI`, {th['pool_full_warnings']} pool-full warnings) | "
        f"{th['floor']:.0f} | {th['ours']:.0f} | {th['ratio']:.2f}x |"
    )
    if "floor_timeout" in th:
        w(
            f"| the same, floor with a 60 s read timeout (as every SDK call has) | "
            f"{th['floor_timeout']:.0f} | {th['ours']:.0f} | {th['ratio_vs_floor_timeout']:.2f}x |"
        )
    return lines


def _realtime(live: Result, meta: Meta) -> list[str]:
    lines: list[str] = []
    w = lines.append
    w(
        f"Live transcription of {live['audio_seconds']:.0f} s of 16 kHz linear16 in 100 ms chunks, "
        "sent as fast as "
        "the emulator (another process) takes it, interim results on; client CPU per second of audio "
        "(`bench/_realtime.py`; the bare clients decode each event with msgspec into the same structs)."
    )
    w("")
    w("| Client | CPU µs per audio second | vs bare websockets (asyncio) |")
    w("|---|---|---|")
    labels = {
        "bare_websockets": "websockets asyncio client used directly",
        "bare_websockets_sync": "websockets threading client used directly",
        "bare_aiohttp": "aiohttp `ws_connect` used directly",
        "ours_async": "ours: `AsyncListenSession.transcribe`",
        "ours_sync": "ours: `ListenSession.transcribe`",
    }
    per = live["cpu_us_per_audio_s"]
    for key, label in labels.items():
        w(f"| {label} | {per[key]:.0f} | {live['ratio_vs_bare_websockets'][key]:.2f}x |")
    rb, conc, first = live["ratio_vs_bare"], live["concurrent"], live["first_interim"]
    w("")
    w(
        f"Each driver vs the same library's bare client: async {rb['ours_async']:.2f}x, "
        f"sync {rb['ours_sync']:.2f}x. "
        f"{conc['sessions']} concurrent async sessions: {conc['lost']} events lost "
        f"({conc['events_each']} each, {conc['wall_s']:.2f} s). First interim result "
        f"{first['ms']:.2f} ms after its 100 ms chunk went out ({first['fraction_of_chunk']:.3f} of a chunk)."
    )
    return lines


def _async_clients(aio: Result, meta: Meta) -> list[str]:
    lines: list[str] = []
    w = lines.append
    w(
        "Calls/s (wall) and client CPU per call at concurrency 1/16/64 against `bench/_server.py` "
        "holding every reply 20 ms (`bench/_async.py`; bge-m3 `rank`, reply decoded into a typed struct)."
    )
    w("")
    w("| Client | 1: calls/s | 16: calls/s | 64: calls/s | CPU µs/call at 1 / 16 / 64 |")
    w("|---|---|---|---|---|")
    labels = {
        "aiohttp": "aiohttp used directly + msgspec",
        "httpx": "httpx `AsyncClient` used directly + msgspec",
        "ours_async": "ours: `AsyncWorkersAI` (aiohttp)",
        "ours_threads": "ours: sync `WorkersAI`, one thread per concurrent call",
    }
    for key, label in labels.items():
        row = aio[key]
        calls = " | ".join(f"{row[lv]['calls_per_s']:.0f}" for lv in ("1", "16", "64"))
        cpu = " / ".join(f"{row[lv]['cpu_us_per_call']:.0f}" for lv in ("1", "16", "64"))
        w(f"| {label} | {calls} | {cpu} |")
    r = aio["ratio_vs_aiohttp"]
    t = aio["ratio_vs_threads"]
    w("")
    w(
        f"Ours / aiohttp: {r['1']:.2f}x, {r['16']:.2f}x, {r['64']:.2f}x; "
        f"ours async / ours on threads: {t['1']:.2f}x, {t['16']:.2f}x, {t['64']:.2f}x."
    )
    return lines


def _otel(otel: Result, meta: Meta) -> list[str]:
    lines: list[str] = []
    w = lines.append
    w(
        "Client CPU per call (bge-m3 `rank`, loopback) with telemetry on (the default) vs "
        "`telemetry=False` in the same process, turns taken per round (`bench/_otel.py`); "
        "p25-p75 of the per-round ratios in brackets."
    )
    w("")
    w("| Process | floor µs | off µs | on µs | on / off | off / floor |")
    w("|---|---|---|---|---|---|")
    for mode, label in OTEL_MODES.items():
        row = otel[mode]
        c = row["cpu_us"]
        lo_hi = "-".join(f"{v:.3f}" for v in row["on_vs_off_p25_p75"])
        w(
            f"| {label} | {c['floor']:.0f} | {c['off']:.0f} | {c['on']:.0f} | "
            f"{row['on_vs_off']:.3f} [{lo_hi}] | {row['off_vs_floor']:.2f} |"
        )
    imp = otel["import"]
    w("")
    w(
        f"Cold start (`import workers_ai`, a client, a model handle; median of {imp['repeats']}): "
        f"{imp['noapi_ms']} ms without the API importable, {imp['api_ms']} ms with it "
        f"({imp['noapi_vs_api']}x); opentelemetry loaded at cold start: {imp['otel_loaded_at_cold_start']}."
    )
    return lines


def _generator(gen: Result, meta: Meta) -> list[str]:
    lines: list[str] = []
    w = lines.append
    w(
        f"`python -m codegen --schemas TMP --out TMP2 --package bench_pkg` on the public catalog "
        f"({gen['models']} models with both schema halves; left out: {', '.join(gen['left_out'])}). "
        "Wall time, including interpreter start."
    )
    w("")
    w("| Run | Wall | CPU | Generator says |")
    w("|---|---|---|---|")
    w(
        f"| whole catalog into an empty folder | {gen['full_s']:.1f} s | {gen['full_cpu_s']:.1f} s | "
        f"{gen['full_summary']} |"
    )
    w(
        f"| one model's description changed ({gen['one_changed_file']}), same out folder | "
        f"{gen['one_changed_s']:.1f} s | {gen['one_changed_cpu_s']:.1f} s | {gen['one_changed_summary']} |"
    )
    return lines


def _footprint(foot: Result, meta: Meta) -> list[str]:
    lines: list[str] = []
    w = lines.append
    w(
        "Files of the runtime dependency closure as installed by pip (RECORD, .pyc included). Ours: "
        "`pip wheel --no-deps .` installed into a fresh venv with only msgspec + urllib3."
    )
    w("")
    w("| Package | Installed size | Files | Runtime deps |")
    w("|---|---|---|---|")
    for impl in ["ours", *PEERS]:
        row = foot.get(impl, {})
        if "error" in row:
            w(f"| {_label(impl, meta)} | not measured: {row['error'][:120]} | | |")
            continue
        deps = ", ".join(row["deps"])
        w(f"| {_label(impl, meta)} | {row['bytes'] / 1e6:.2f} MB | {row['files']:,} | {len(row['deps'])} ({deps}) |")
    return lines


def _type_check(typing_res: Result, meta: Meta) -> list[str]:
    lines: list[str] = []
    w = lines.append
    w(
        f"{typing_res['mypy']} on a ~10-line user file (default options, no config, fresh `--cache-dir`), "
        "pointed at the environment the package is installed in. Peak RSS of the mypy process."
    )
    w("")
    w("| Package | Wall | Peak RSS | Modules analysed (largest packages) | mypy says |")
    w("|---|---|---|---|---|")
    for impl, row in typing_res["rows"].items():
        if "error" in row:
            w(f"| {_label(impl, meta)} | not run: {row['error'][:120]} | | | |")
            continue
        mods = row.get("modules") or {}
        shown = ", ".join(f"{k} {v}" for k, v in mods.items() if k != "total")
        w(
            f"| {_label(impl, meta)} | {row['wall_s']:.1f} s | {row['peak_rss_mb']:.0f} MB | "
            f"{mods.get('total', 'n/a')} ({shown}) | {row['mypy_says']} |"
        )
    return lines


def _size(size_res: Result, meta: Meta) -> list[str]:
    lines: list[str] = []
    w = lines.append
    docs = size_res.get("doc_lines")  # runs before docstrings were counted apart printed lines of Python
    counted = f"lines of code and {docs:,} of docstrings" if isinstance(docs, int) else "lines"
    w(
        f"{size_res['files']} Python files, {size_res['lines']:,} {counted}: model modules "
        f"{size_res['model_lines']:,}, runtime (emulator excluded) {size_res['runtime_lines']:,}. Repeated "
        "blocks across model modules (`duplicates`, 6+ lines): "
        f"{size_res.get('model_duplicate_pairs', 'n/a')} pairs."
    )
    return lines


# The page, section by section: the measurement whose result it prints (its name in latest.json), its
# heading (or what makes it from the result) and the printer of what stands under it.
PAGE: tuple[tuple[str, Heading, Printer], ...] = (
    ("cold", "Cold start", _cold),
    ("calls", "Per call, small reply", _calls_small),
    ("calls", "Per call, 100 x 1024 float embeddings", _calls_big),
    ("queue", lambda queue: f"Bulk queue: {queue.get('requests', 100_000):,} small requests", _bulk_queue),
    ("batch", lambda batch: f"Batch: {batch.get('texts', 10_000):,} texts", _batch),
    ("sse", "SSE parsing", _sse),
    ("emulator", "The emulator under a test suite's load", _emulator),
    ("load", "Streaming and many threads", _load),
    ("realtime", "Realtime sessions", _realtime),
    ("async", "Async client", _async_clients),
    ("otel", "Telemetry cost", _otel),
    ("generator", "Generator", _generator),
    ("footprint", "Install footprint", _footprint),
    ("typing", "Type checking", _type_check),
    ("size", "Size of the generated package", _size),
)
