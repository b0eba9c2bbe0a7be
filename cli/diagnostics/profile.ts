/** `weft diagnostics profile`: the DestinationProfile a proxy gets for an authority. */
import type { DestinationProfile } from "../../proxy/discovery/requests.ts";
import { renderTable } from "../table.ts";

type RequestMatch = NonNullable<DestinationProfile["routes"][number]["condition"]>;

// io.linkerd.proxy.http_types.HttpMethod.Registered, in wire order.
const REGISTERED = ["GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "CONNECT", "HEAD", "TRACE"];

function methodText(
  m: { type?: { $case: "registered"; value: number } | { $case: "unregistered"; value: string } },
): string {
  const t = m.type;
  if (t?.$case === "registered") return REGISTERED[t.value] ?? String(t.value);
  return t?.value ?? "?";
}

export function describeMatch(m: RequestMatch | undefined): string {
  const c = m?.match;
  switch (c?.$case) {
    case undefined:
      return "*";
    case "path":
      return `path=${c.value.regex}`;
    case "method":
      return `method=${methodText(c.value)}`;
    case "not":
      return `not(${describeMatch(c.value)})`;
    case "all":
      return c.value.matches.map(describeMatch).join(" && ") || "*";
    case "any":
      return `(${c.value.matches.map(describeMatch).join(" || ")})`;
  }
}

/** float32 fields decoded to float64 (0.2 arrives as 0.20000000298…): six significant digits. */
function round(x: number): number {
  return Number(x.toPrecision(6));
}

function seconds(d: { seconds: bigint; nanos: number } | undefined): string {
  return d ? `${Number(d.seconds) + d.nanos / 1e9}s` : "-";
}

export function renderProfile(authority: string, p: DestinationProfile): string {
  const head = [
    `authority:   ${authority}`,
    `profile:     ${p.fullyQualifiedName || "(none: the default profile)"}`,
    `opaque:      ${p.opaqueProtocol}`,
    `retryBudget: ${
      p.retryBudget
        ? `ratio ${round(p.retryBudget.retryRatio)}, min ${p.retryBudget.minRetriesPerSecond}/s, ttl ${
          seconds(p.retryBudget.ttl)
        }`
        : "-"
    }`,
  ];
  if (p.dstOverrides.length > 0) {
    head.push(`dstOverrides: ${p.dstOverrides.map((d) => `${d.authority} (${d.weight})`).join(", ")}`);
  }
  const routes = p.routes.length === 0 ? "no routes\n" : renderTable(
    ["ROUTE", "CONDITION", "RETRYABLE", "TIMEOUT", "RESPONSE CLASSES"],
    p.routes.map((r) => [
      r.metricsLabels.route ?? "",
      describeMatch(r.condition),
      String(r.isRetryable),
      seconds(r.timeout),
      String(r.responseClasses.length),
    ]),
  );
  return head.join("\n") + "\n\n" + routes;
}
