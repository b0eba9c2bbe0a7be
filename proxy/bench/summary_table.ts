/**
 * The closing table of `deno task bench:dataplane`: the issue-15 figures per path (direct, weft
 * pair, nginx pair) from the result object, medians with their range over the rounds, and the
 * weft ÷ nginx ratio taken within the same run. A Markdown table, so it can be pasted into a note.
 */
type Result = Record<string, number | string | null>;

const fmt = (v: number | string | null | undefined) =>
  typeof v === "number" ? (v < 0 ? "failed" : String(Number(v.toPrecision(4)))) : "—";

/** "median (min–max)" when the result has a range for `key`. */
function cell(r: Result, key: string): string {
  if (!(key in r)) return "—";
  const lo = r[`${key}_min`], hi = r[`${key}_max`];
  return lo === undefined || hi === undefined ? fmt(r[key]) : `${fmt(r[key])} (${fmt(lo)}–${fmt(hi)})`;
}

function ratio(r: Result, a: string, b: string): string {
  const x = r[a], y = r[b];
  return typeof x === "number" && typeof y === "number" && x >= 0 && y > 0 ? (x / y).toFixed(2) : "—";
}

export function summaryTable(r: Result): string {
  const rows: [string, string, string, string, string][] = [];
  const mem = (label: string, phase: string, field: string) =>
    rows.push([
      label,
      "—",
      cell(r, `mesh_proxy_${phase}_${field}_mb`),
      cell(r, `reference_nginx_${phase}_${field}_mb`),
      ratio(r, `mesh_proxy_${phase}_${field}_mb`, `reference_nginx_${phase}_${field}_mb`),
    ]);
  for (
    const [phase, what] of [["idle", "idle"], ["after_http", "after HTTP part"], [
      "after_long",
      "after long run",
    ]]
  ) {
    if (!(`mesh_proxy_${phase}_vm_rss_mb` in r)) continue;
    mem(`proxy VmRSS MB, ${what} (largest proxy)`, phase, "vm_rss");
    mem(`proxy RssAnon MB, ${what}`, phase, "rss_anon");
    mem(`proxy RssFile MB, ${what}`, phase, "rss_file");
    mem(`proxy VmHWM MB, ${what}`, phase, "vm_hwm");
  }
  const path = (label: string, suffix: string, ratioKey?: string, withDirect = true) =>
    rows.push([
      label,
      withDirect ? cell(r, `${suffix.replace("{p}", "direct")}`) : "—",
      cell(r, suffix.replace("{p}", "mesh")),
      cell(r, suffix.replace("{p}", "reference")),
      ratioKey
        ? cell(r, ratioKey)
        : ratio(r, suffix.replace("{p}", "mesh"), suffix.replace("{p}", "reference")),
    ]);
  for (const [key, title] of [["http1", "HTTP/1.1"], ["grpc", "gRPC"]]) {
    if (!(`${key}_direct_p99_ms_at_1000rps` in r)) continue;
    path(
      `${title} CPU µs/req per proxy at 1000/s`,
      `${key}_{p}_cpu_us_per_req`,
      `${key}_mesh_cpu_vs_reference`,
      false,
    );
    path(
      `${title} ctx switches/req per proxy at 1000/s`,
      `${key}_{p}_ctx_switches_per_req`,
      `${key}_mesh_ctx_switches_vs_reference`,
      false,
    );
    if (`${key}_mesh_gc_ms_per_1k_req` in r) {
      rows.push([
        `${title} GC ms per 1k req per proxy`,
        "—",
        cell(r, `${key}_mesh_gc_ms_per_1k_req`),
        "—",
        "—",
      ]);
    }
    path(`${title} p50 ms at 1000/s`, `${key}_{p}_p50_ms_at_1000rps`);
    path(`${title} p99 ms at 1000/s`, `${key}_{p}_p99_ms_at_1000rps`);
    rows.push([
      `${title} p99 ÷ direct p99 at 1000/s`,
      "1",
      cell(r, `${key}_mesh_p99_vs_direct_at_1000rps`),
      cell(r, `${key}_reference_p99_vs_direct_at_1000rps`),
      "—",
    ]);
    const low = r.low_rate_per_s;
    if (typeof low === "number") {
      path(`${title} p50 ms at ${low}/s (idle gaps)`, `${key}_{p}_p50_ms_at_${low}rps`);
      path(`${title} p99 ms at ${low}/s (idle gaps)`, `${key}_{p}_p99_ms_at_${low}rps`);
    }
    path(`${title} max req/s (knee)`, `${key}_{p}_max_rps`);
    path(`${title} max req/s per proxy core`, `${key}_{p}_rps_per_core`, undefined, false);
  }
  if ("long_run_requests" in r) {
    const n = r.long_run_requests;
    rows.push([
      `HTTP/1.1 CPU µs/req per proxy, long run (${n} req)`,
      "—",
      cell(r, "long_run_proxy_cpu_us_per_req"),
      "—",
      "—",
    ]);
    rows.push([
      `HTTP/1.1 GC ms per 1k req per proxy, long run`,
      "—",
      cell(r, "long_run_proxy_gc_ms_per_1k_req"),
      "—",
      "—",
    ]);
  }
  if ("direct_cps" in r) {
    path("new connections/s (L4, 8 at a time)", "{p}_cps", "mesh_vs_reference_cps");
    path("new connection first byte p50 ms (L4)", "{p}_new_conn_first_byte_p50_ms");
    path("new connection first byte p99 ms (L4)", "{p}_new_conn_first_byte_p99_ms");
  }
  rows.push([
    "background CPU cores (not the bench's)",
    cell(r, "background_cpu_cores"),
    "",
    "",
    "",
  ]);
  const head = ["figure", "direct", "weft pair", "nginx pair", "weft ÷ nginx"];
  return [
    `| ${head.join(" | ")} |`,
    `| ${head.map(() => "---").join(" | ")} |`,
    ...rows.map((row) => `| ${row.join(" | ")} |`),
  ].join("\n");
}
