/**
 * PromQL text for the view commands: label matchers with escaped values, and the query shapes Linkerd's
 * viz metrics API uses over the proxies' series (`response_total` by classification,
 * `histogram_quantile` over `response_latency_ms_bucket`, `tcp_open_connections`). Pure: a query is a
 * string, tested as such.
 */

/** One matcher: `=` (default), `!=`, `=~` or `!~`. */
export interface Matcher {
  label: string;
  op?: "=" | "!=" | "=~" | "!~";
  value: string;
}

const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

/** A label value as a PromQL double-quoted string. */
export function quote(value: string): string {
  return `"${value.replaceAll("\\", "\\\\").replaceAll('"', '\\"').replaceAll("\n", "\\n")}"`;
}

/** Regex metacharacters escaped, so a name is matched literally inside `=~`. */
export function regexLiteral(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

export function selector(matchers: readonly Matcher[]): string {
  const parts = matchers.map((m) => {
    if (!LABEL.test(m.label)) throw new Error(`"${m.label}" is not a Prometheus label name`);
    return `${m.label}${m.op ?? "="}${quote(m.value)}`;
  });
  return `{${parts.join(", ")}}`;
}

export function by(labels: readonly string[]): string {
  for (const l of labels) if (!LABEL.test(l)) throw new Error(`"${l}" is not a Prometheus label name`);
  return `(${labels.join(", ")})`;
}

/** Responses counted over the window, split by classification (success/failure) and tls. */
export function responsesQuery(sel: string, window: string, groupBy: readonly string[]): string {
  return `sum(increase(response_total${sel}[${window}])) by ${by([...groupBy, "classification", "tls"])}`;
}

/** A latency quantile (ms) from the proxies' histogram over the window. */
export function latencyQuery(
  quantile: number,
  sel: string,
  window: string,
  groupBy: readonly string[],
  metric = "response_latency_ms_bucket",
): string {
  return `histogram_quantile(${quantile}, sum(rate(${metric}${sel}[${window}])) by ${
    by(["le", ...groupBy])
  })`;
}

export function tcpOpenQuery(sel: string, groupBy: readonly string[]): string {
  return `sum(tcp_open_connections${sel}) by ${by(groupBy)}`;
}

export function tcpBytesQuery(
  which: "read" | "write",
  sel: string,
  window: string,
  groupBy: readonly string[],
): string {
  return `sum(increase(tcp_${which}_bytes_total${sel}[${window}])) by ${by(groupBy)}`;
}

export const QUANTILES = [0.5, 0.95, 0.99] as const;
