/**
 * ServiceProfile (linkerd.io/v1alpha2) → DestinationProfile, and the default profile sent when
 * no ServiceProfile exists.
 */
import { DurationError, parseGoDuration } from "../../proto/go_duration.ts";
import { toHttpMethod } from "../../proto/http_method.ts";
import type {
  DestinationProfile,
  RequestMatch,
  ResponseClass,
  ResponseMatch,
  Route,
  WeightedDst,
} from "../../proto/gen/destination.ts";
import type { Duration } from "../../proto/gen/google/protobuf/duration.ts";
import type { HttpMethod } from "../../proto/gen/http_types.ts";
import type { ServiceProfile, SpRequestMatch, SpResponseMatch } from "./k8s_types.ts";

export class ProfileError extends Error {
  override name = "ProfileError";
}

/** A ServiceProfile duration (Go's grammar, `300ms`, `1.5s`, `1m30s`; not negative) as a protobuf Duration. */
export function profileDuration(text: string, what = "duration"): Duration {
  let ns: bigint;
  try {
    ns = parseGoDuration(text, what);
  } catch (e) {
    throw e instanceof DurationError ? new ProfileError(e.message) : e;
  }
  if (ns < 0n) throw new ProfileError(new DurationError(what, text, "negative").message);
  return { seconds: ns / 1_000_000_000n, nanos: Number(ns % 1_000_000_000n) };
}

/** Parses a Kubernetes quantity as a number (`1`, `0.5`, `500m`). */
export function parseQuantity(q: number | string): number {
  if (typeof q === "number") return q;
  const m = /^(\d+(?:\.\d+)?)(m|k|M|G)?$/.exec(q.trim());
  if (!m) throw new ProfileError(`invalid weight "${q}": want a number or a quantity such as "500m"`);
  const scale = { m: 1e-3, k: 1e3, M: 1e6, G: 1e9 }[m[2] ?? ""] ?? 1;
  return Number(m[1]) * scale;
}

function method(name: string): HttpMethod {
  return toHttpMethod(name, true);
}

export function requestMatch(m: SpRequestMatch, where: string): RequestMatch {
  const set = [m.all, m.any, m.not, m.pathRegex, m.method].filter((x) => x !== undefined).length;
  if (set === 0) throw new ProfileError(`${where}: condition is empty`);
  // Several fields in one condition mean all of them, as Linkerd reads it.
  const parts: RequestMatch[] = [];
  if (m.all) {
    parts.push({
      match: { $case: "all", value: { matches: m.all.map((x, i) => requestMatch(x, `${where}.all[${i}]`)) } },
    });
  }
  if (m.any) {
    parts.push({
      match: { $case: "any", value: { matches: m.any.map((x, i) => requestMatch(x, `${where}.any[${i}]`)) } },
    });
  }
  if (m.not) parts.push({ match: { $case: "not", value: requestMatch(m.not, `${where}.not`) } });
  if (m.pathRegex !== undefined) parts.push({ match: { $case: "path", value: { regex: m.pathRegex } } });
  if (m.method !== undefined) parts.push({ match: { $case: "method", value: method(m.method) } });
  return parts.length === 1 ? parts[0] : { match: { $case: "all", value: { matches: parts } } };
}

export function responseMatch(m: SpResponseMatch, where: string): ResponseMatch {
  const parts: ResponseMatch[] = [];
  if (m.all) {
    parts.push({
      match: {
        $case: "all",
        value: { matches: m.all.map((x, i) => responseMatch(x, `${where}.all[${i}]`)) },
      },
    });
  }
  if (m.any) {
    parts.push({
      match: {
        $case: "any",
        value: { matches: m.any.map((x, i) => responseMatch(x, `${where}.any[${i}]`)) },
      },
    });
  }
  if (m.not) parts.push({ match: { $case: "not", value: responseMatch(m.not, `${where}.not`) } });
  if (m.status) {
    const min = m.status.min ?? 0;
    const max = m.status.max ?? 0;
    if ((min && (min < 100 || min > 599)) || (max && (max < 100 || max > 599)) || (min && max && min > max)) {
      throw new ProfileError(`${where}: status range ${min}-${max} is not within 100-599`);
    }
    parts.push({ match: { $case: "status", value: { min, max } } });
  }
  if (parts.length === 0) throw new ProfileError(`${where}: condition is empty`);
  return parts.length === 1 ? parts[0] : { match: { $case: "all", value: { matches: parts } } };
}

export const DEFAULT_RETRY_BUDGET = {
  retryRatio: 0.2,
  minRetriesPerSecond: 10,
  ttl: { seconds: 10n, nanos: 0 },
};

export function defaultProfile(fqn: string): DestinationProfile {
  return {
    routes: [],
    retryBudget: DEFAULT_RETRY_BUDGET,
    dstOverrides: [],
    opaqueProtocol: false,
    fullyQualifiedName: fqn,
  };
}

/**
 * Translates a ServiceProfile. Routes that cannot be translated are left out and reported in
 * `problems` (the validator rejects them at admission; this guards objects that predate it).
 */
export function translateProfile(
  sp: ServiceProfile,
  fqn: string,
  problems: string[] = [],
): DestinationProfile {
  const spec = sp.spec ?? {};
  const routes: Route[] = [];
  (spec.routes ?? []).forEach((r, i) => {
    const where = `ServiceProfile ${sp.metadata.namespace}/${sp.metadata.name} route ${
      JSON.stringify(r.name)
    } (#${i})`;
    try {
      if (!r.condition) throw new ProfileError(`${where}: has no condition`);
      const responseClasses: ResponseClass[] = (r.responseClasses ?? []).map((c, j) => {
        if (!c.condition) throw new ProfileError(`${where}: responseClasses[${j}] has no condition`);
        return {
          condition: responseMatch(c.condition, `${where} responseClasses[${j}]`),
          isFailure: c.isFailure ?? false,
        };
      });
      routes.push({
        condition: requestMatch(r.condition, where),
        responseClasses,
        metricsLabels: { route: r.name },
        isRetryable: r.isRetryable ?? false,
        timeout: r.timeout ? profileDuration(r.timeout, "timeout") : undefined,
      });
    } catch (e) {
      problems.push(e instanceof Error ? e.message : String(e));
    }
  });
  let retryBudget = DEFAULT_RETRY_BUDGET;
  if (spec.retryBudget) {
    try {
      retryBudget = {
        retryRatio: spec.retryBudget.retryRatio ?? DEFAULT_RETRY_BUDGET.retryRatio,
        minRetriesPerSecond: spec.retryBudget.minRetriesPerSecond ?? DEFAULT_RETRY_BUDGET.minRetriesPerSecond,
        ttl: spec.retryBudget.ttl
          ? profileDuration(spec.retryBudget.ttl, "retryBudget.ttl")
          : DEFAULT_RETRY_BUDGET.ttl,
      };
    } catch (e) {
      problems.push(
        `ServiceProfile ${sp.metadata.namespace}/${sp.metadata.name} retryBudget: ${(e as Error).message}`,
      );
    }
  }
  const dstOverrides: WeightedDst[] = [];
  for (const d of spec.dstOverrides ?? []) {
    try {
      // Weights go out in ten-thousandths: a weight of 1 is 10000.
      dstOverrides.push({ authority: d.authority, weight: Math.round(parseQuantity(d.weight) * 10000) });
    } catch (e) {
      problems.push(
        `ServiceProfile ${sp.metadata.namespace}/${sp.metadata.name} dstOverrides: ${(e as Error).message}`,
      );
    }
  }
  return {
    routes,
    retryBudget,
    dstOverrides,
    opaqueProtocol: false,
    fullyQualifiedName: fqn,
    profileRef: {
      kind: {
        $case: "resource",
        value: {
          group: "linkerd.io",
          kind: "ServiceProfile",
          name: sp.metadata.name ?? "",
          namespace: sp.metadata.namespace ?? "",
          section: "",
          port: 0,
        },
      },
    },
  };
}
