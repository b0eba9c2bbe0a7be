/**
 * The values file of `deploy --values=FILE` / `render --values=FILE` (docs/ha.md): a small YAML schema for
 * high availability, validated field by field so that an error names the field it is about.
 *
 *   ha: true                          # as --ha
 *   replicas: { destination: 3, identity: 3, proxy-injector: 3 }
 *   antiAffinity: auto                # auto | preferred | required
 *   resources:                        # per container and field, over what HA or the manifests set
 *     policy: { requests: { cpu: 50m, memory: 160Mi }, limits: { memory: 768Mi } }
 *     linkerd-proxy: { requests: { memory: 64Mi } }   # the control plane's own proxies
 */
import { parse } from "yaml";
import { editDistance } from "../control/flags/flags.ts";

/** The Deployments HA scales, by their `linkerd.io/control-plane-component` label. */
export const HA_COMPONENTS = ["destination", "identity", "proxy-injector"] as const;
export type HaComponent = typeof HA_COMPONENTS[number];
/** Containers of those Deployments whose resources may be set (linkerd-proxy: the injected proxies). */
export const HA_CONTAINERS = [
  "destination",
  "policy",
  "validator",
  "identity",
  "proxy-injector",
  "linkerd-proxy",
] as const;
export type HaContainer = typeof HA_CONTAINERS[number];
export type AntiAffinity = "auto" | "preferred" | "required";

export interface ResourceValues {
  requests?: { cpu?: string; memory?: string };
  limits?: { cpu?: string; memory?: string };
}

export interface HaValues {
  ha?: boolean;
  replicas?: Partial<Record<HaComponent, number>>;
  antiAffinity?: AntiAffinity;
  resources?: Partial<Record<HaContainer, ResourceValues>>;
}

export class ValuesError extends Error {
  override name = "ValuesError";
}

/** Kubernetes quantities, as the injector accepts them in its resource annotations. */
const QUANTITY = /^(\d+(\.\d+)?|\.\d+)(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$/;
const MAX_REPLICAS = 15;

/** "; did you mean X?" for a misspelt name among known ones, else "". */
export function didYouMean(given: string, known: readonly string[], prefix = ""): string {
  const near = known.filter((k) => editDistance(k.toLowerCase(), given.toLowerCase()) <= 2);
  return near.length ? `; did you mean ${near.map((k) => `${prefix}${k}`).join(" or ")}?` : "";
}

function isMap(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function keysOf(v: unknown, field: string, known: readonly string[]): Record<string, unknown> {
  if (!isMap(v)) {
    throw new ValuesError(`${field}: want a map (${known.join(", ")}), got ${JSON.stringify(v)}`);
  }
  for (const k of Object.keys(v)) {
    if (!known.includes(k)) {
      throw new ValuesError(
        `${field ? `${field}.` : ""}${k}: unknown field${didYouMean(k, known)} (known: ${known.join(", ")})`,
      );
    }
  }
  return v;
}

function quantity(v: unknown, field: string): string {
  const s = typeof v === "number" ? String(v) : v;
  if (typeof s !== "string" || !QUANTITY.test(s)) {
    throw new ValuesError(
      `${field}: ${JSON.stringify(v)} is not a Kubernetes quantity (such as 100m, 0.5, 64Mi or 1Gi)`,
    );
  }
  return s;
}

function resourceValues(v: unknown, field: string): ResourceValues {
  const m = keysOf(v, field, ["requests", "limits"]);
  const out: ResourceValues = {};
  for (const part of ["requests", "limits"] as const) {
    if (m[part] === undefined) continue;
    const r = keysOf(m[part], `${field}.${part}`, ["cpu", "memory"]);
    out[part] = {};
    for (const k of ["cpu", "memory"] as const) {
      if (r[k] !== undefined) out[part][k] = quantity(r[k], `${field}.${part}.${k}`);
    }
  }
  return out;
}

/** Validates parsed values; every error names the field (`replicas.identity`, `resources.policy.limits.cpu`). */
export function validateValues(v: unknown): HaValues {
  if (v === null || v === undefined) return {};
  const m = keysOf(v, "", ["ha", "replicas", "antiAffinity", "resources"]);
  const out: HaValues = {};
  if (m.ha !== undefined) {
    if (typeof m.ha !== "boolean") throw new ValuesError(`ha: ${JSON.stringify(m.ha)} is not true or false`);
    out.ha = m.ha;
  }
  if (m.replicas !== undefined) {
    const r = keysOf(m.replicas, "replicas", HA_COMPONENTS);
    out.replicas = {};
    for (const [k, n] of Object.entries(r)) {
      if (typeof n !== "number" || !Number.isInteger(n) || n < 1 || n > MAX_REPLICAS) {
        throw new ValuesError(
          `replicas.${k}: ${JSON.stringify(n)} is not a whole number from 1 to ${MAX_REPLICAS}`,
        );
      }
      out.replicas[k as HaComponent] = n;
    }
  }
  if (m.antiAffinity !== undefined) {
    const a = m.antiAffinity;
    if (a !== "auto" && a !== "preferred" && a !== "required") {
      throw new ValuesError(`antiAffinity: ${JSON.stringify(a)} is not auto, preferred or required`);
    }
    out.antiAffinity = a;
  }
  if (m.resources !== undefined) {
    const r = keysOf(m.resources, "resources", HA_CONTAINERS);
    out.resources = {};
    for (const [k, x] of Object.entries(r)) {
      out.resources[k as HaContainer] = resourceValues(x, `resources.${k}`);
    }
  }
  return out;
}

/** Parses and validates a values file's text; `origin` (the path) prefixes every error. */
export function parseValues(text: string, origin: string): HaValues {
  let doc: unknown;
  try {
    doc = parse(text);
  } catch (e) {
    throw new ValuesError(`${origin}: not YAML: ${(e as Error).message.split("\n")[0]}`);
  }
  try {
    return validateValues(doc);
  } catch (e) {
    throw new ValuesError(`${origin}: ${(e as Error).message.replace(/^: /, "")}`);
  }
}
