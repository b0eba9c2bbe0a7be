/**
 * The API's query parameters, checked before anything is asked of the cluster: a bad one is a 400 whose
 * message names the parameter and what it takes. Pure.
 */
import { findKind, type Kind } from "../../cli/kinds.ts";
import { CHART_WINDOWS, type ChartWindow } from "./series.ts";
import { ApiError } from "./server.ts";

const NAME = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;
const LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** Kinds the dashboard shows metrics for (the CLI's names; URL page paths use the plurals). */
export const VIEW_KINDS = ["deployment", "statefulset", "daemonset", "pod", "service", "namespace"];

/** Stat windows offered (the CLI takes any duration; the page offers these). */
export const STAT_WINDOWS: Record<string, number> = { "1m": 60, "5m": 300, "15m": 900, "1h": 3600 };

export function namespaceParam(p: URLSearchParams, required: boolean): string | undefined {
  const ns = p.get("ns") ?? "";
  if (ns === "") {
    if (required) throw new ApiError(400, "ns: a namespace is required");
    return undefined;
  }
  if (!LABEL.test(ns)) throw new ApiError(400, `ns: "${ns.slice(0, 80)}" is not a namespace name`);
  return ns;
}

export function nameParam(p: URLSearchParams, key = "name"): string {
  const n = p.get(key) ?? "";
  if (!NAME.test(n)) throw new ApiError(400, `${key}: "${n.slice(0, 80)}" is not a Kubernetes object name`);
  return n;
}

export function kindParam(p: URLSearchParams, fallback = "deployment"): Kind {
  const text = p.get("kind") ?? fallback;
  let kind: Kind;
  try {
    kind = findKind(text);
  } catch {
    throw new ApiError(400, `kind: "${text.slice(0, 40)}" is not one of ${VIEW_KINDS.join(", ")}`);
  }
  if (!VIEW_KINDS.includes(kind.label)) {
    throw new ApiError(400, `kind: "${text.slice(0, 40)}" is not one of ${VIEW_KINDS.join(", ")}`);
  }
  return kind;
}

export function statWindowParam(p: URLSearchParams): { text: string; seconds: number } {
  const text = p.get("window") ?? "1m";
  const seconds = STAT_WINDOWS[text];
  if (seconds === undefined) {
    throw new ApiError(
      400,
      `window: "${text.slice(0, 20)}" is not one of ${Object.keys(STAT_WINDOWS).join(", ")}`,
    );
  }
  return { text, seconds };
}

/** A chart window by name; `step` (seconds) may refine it, as long as the chart keeps 10..2000 points. */
export function chartWindowParam(p: URLSearchParams): ChartWindow {
  const text = p.get("window") ?? "15m";
  const w = CHART_WINDOWS.find((x) => x.name === text);
  if (!w) {
    throw new ApiError(
      400,
      `window: "${text.slice(0, 20)}" is not one of ${CHART_WINDOWS.map((x) => x.name).join(", ")}`,
    );
  }
  const stepText = p.get("step");
  if (stepText === null) return w;
  const step = Number(stepText);
  if (
    !/^\d+$/.test(stepText) || step < 5 || w.seconds / step > 2000 || w.seconds / step < 10 ||
    w.seconds % step
  ) {
    throw new ApiError(
      400,
      `step: "${
        stepText.slice(0, 20)
      }" must be whole seconds ≥ 5 dividing the ${w.name} window into 10..2000 points`,
    );
  }
  return { ...w, step, rateWindow: Math.max(30, 2 * step) };
}
