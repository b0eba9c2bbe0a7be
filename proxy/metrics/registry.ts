/**
 * The proxy's Prometheus registry and text exposition format (0.0.4). The proxy needs only this
 * much of a metrics library: families registered by name and rendered at scrape time. Its own
 * instead of prom-client, which cost ~3.5 MiB of anonymous memory in every proxy
 * (docs/proxy_memory.md); the control plane keeps prom-client.
 *
 * The output matches what prom-client printed (HELP, TYPE, one line per sample, families separated
 * by a blank line), so scrapers and the tests see the same text.
 */

export type LabelValues = Record<string, string | number>;

/** One sample of a family. `metricName` overrides the family name (histogram `_bucket`/`_sum`/`_count`). */
export interface MetricSample {
  value: number;
  labels: LabelValues;
  metricName?: string;
}

export interface MetricSnapshot {
  name: string;
  help: string;
  type: "counter" | "gauge" | "histogram";
  values: MetricSample[];
}

/** Anything the registry can render: read at each scrape. */
export interface MetricFamily {
  readonly name: string;
  get(): MetricSnapshot | Promise<MetricSnapshot>;
}

export const PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

export class Registry {
  readonly contentType = PROMETHEUS_CONTENT_TYPE;
  readonly #families = new Map<string, MetricFamily>();

  /** Adds a family; a second, different family with the same name is a programming error. */
  registerMetric(f: MetricFamily): void {
    const old = this.#families.get(f.name);
    if (old !== undefined && old !== f) throw new Error(`metric ${f.name} is already registered`);
    this.#families.set(f.name, f);
  }

  /** The exposition text of every family, in registration order. */
  async metrics(): Promise<string> {
    const parts: string[] = [];
    for (const f of this.#families.values()) parts.push(render(await f.get()));
    return `${parts.join("\n\n")}\n`;
  }
}

function render(m: MetricSnapshot): string {
  const name = escapeText(m.name);
  const lines = [`# HELP ${name} ${escapeText(m.help)}`, `# TYPE ${name} ${m.type}`];
  for (const v of m.values) {
    let labels = "";
    for (const k in v.labels) {
      const value = v.labels[k];
      const text = typeof value === "string" ? escapeText(value).replaceAll('"', '\\"') : String(value);
      labels += `${labels ? "," : ""}${k}="${text}"`;
    }
    lines.push(`${v.metricName ?? name}${labels ? `{${labels}}` : ""} ${formatValue(v.value)}`);
  }
  return lines.join("\n");
}

function escapeText(s: string): string {
  return s.replaceAll("\\", "\\\\").replaceAll("\n", "\\n");
}

export function formatValue(v: number): string {
  if (Number.isNaN(v)) return "Nan";
  if (v === Infinity) return "+Inf";
  if (v === -Infinity) return "-Inf";
  return String(v);
}
