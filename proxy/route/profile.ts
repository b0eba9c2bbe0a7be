/**
 * Compiles a `DestinationProfile` (ServiceProfile) once per update: routes in order (the first
 * whose condition matches wins), each with its response classes (failure classification), timeout
 * (for the whole request, retries included) and retryability under the profile's retry budget,
 * plus `dst_overrides` as a weighted distribution of authorities (traffic split).
 *
 * Like Linkerd's proxy, parts it cannot use are dropped rather than failing the profile: a route
 * whose condition is missing or invalid, a response class without a usable condition, an override
 * of weight 0, an invalid budget (then routes are not retried). Each drop is listed in `warnings`.
 *
 * Path regexes are Rust regex syntax (proto/rust_regex.ts), anchored the way Linkerd does it: the
 * pattern is trimmed, then `^` and `$` are added unless already present, and matched against the path
 * without the query.
 */
import { type Endpoint, endpointFromWire } from "../core/endpoint.ts";
import { anchorProfilePathRegex, SearchRegex } from "../../proto/rust_regex.ts";
import type {
  DestinationProfile,
  RequestMatch,
  ResponseMatch,
} from "../../proto/gen_messages/destination.ts";
import type { Clock } from "../../proto/support/clock.ts";
import type { ResponseClassifier } from "../metrics/response_class.ts";
import type { Rng } from "../core/rng.ts";
import type { HttpRequest } from "../http/message.ts";
import { RetryBudget, retryBudgetConfig } from "./retry/budget.ts";
import type { RequestPlan } from "./retry/execute.ts";
import { profileRetryPolicy } from "./retry/policy.ts";
import { NO_TIMEOUTS } from "./retry/timeouts.ts";
import { Distribution } from "./distribution.ts";
import { durationMs } from "../core/duration.ts";
import { type RouteMeta, routeMeta } from "./meta.ts";
import { httpMethodName } from "./method.ts";
import { RequestParts } from "./request_parts.ts";

type Cond = (method: string, path: string) => boolean;

export interface ProfileRoute {
  /** `metrics_labels.route` (the ServiceProfile route name), "" when absent. */
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  /** Response classes as the metrics' ResponseClassifier; undefined when the route has none. */
  readonly classifier: ResponseClassifier | undefined;
  readonly plan: RequestPlan;
  readonly matches: (method: string, path: string) => boolean;
}

export interface ProfileTarget {
  /** `host:port` to resolve with Destination.Get. */
  readonly authority: string;
  readonly weight: number;
  readonly backendRef: RouteMeta | undefined;
}

export class CompiledProfile {
  readonly #parts = new RequestParts();

  constructor(
    readonly fullyQualifiedName: string,
    readonly opaqueProtocol: boolean,
    readonly endpoint: Endpoint | undefined,
    readonly routes: readonly ProfileRoute[],
    /** dst_overrides; undefined when there are none. */
    readonly targets: Distribution<ProfileTarget> | undefined,
    readonly budget: RetryBudget | undefined,
    readonly warnings: readonly string[],
  ) {}

  /** A ServiceProfile with routes or overrides: it takes precedence over the outbound policy. */
  get interesting(): boolean {
    return this.routes.length > 0 || this.targets !== undefined;
  }

  /** The first route whose condition matches, or undefined (no per-route policy). */
  route(req: HttpRequest): ProfileRoute | undefined {
    if (this.routes.length === 0) return undefined;
    const p = this.#parts.reset(req);
    for (const r of this.routes) if (r.matches(p.method, p.path)) return r;
    return undefined;
  }

  /** The override target for one request (weights decimillis, honoured statistically). */
  chooseTarget(rng: Rng): ProfileTarget | undefined {
    return this.targets?.choose(rng);
  }
}

/** Linkerd's anchoring: trim, then add ^ / $ unless present (shared with the validator). */
export const anchorProfileRegex = anchorProfilePathRegex;

function compileCondition(
  m: RequestMatch | undefined,
  warn: (w: string) => void,
  what: string,
): Cond | undefined {
  const k = m?.match;
  if (!k) return undefined;
  switch (k.$case) {
    case "all": {
      const cs = k.value.matches.map((x, i) => compileCondition(x, warn, `${what}.all[${i}]`)).filter((c) =>
        c !== undefined
      );
      return (method, path) => cs.every((c) => c(method, path));
    }
    case "any": {
      const cs = k.value.matches.map((x, i) => compileCondition(x, warn, `${what}.any[${i}]`)).filter((c) =>
        c !== undefined
      );
      return (method, path) => cs.some((c) => c(method, path));
    }
    case "not": {
      const c = compileCondition(k.value, warn, `${what}.not`);
      return c ? (method, path) => !c(method, path) : undefined;
    }
    case "path": {
      let re: SearchRegex;
      try {
        re = new SearchRegex(anchorProfilePathRegex(k.value.regex));
      } catch (e) {
        warn(`${what}: invalid pathRegex ${JSON.stringify(k.value.regex)}: ${(e as Error).message}`);
        return undefined;
      }
      return (_method, path) => re.test(path);
    }
    case "method": {
      let name: string;
      try {
        name = httpMethodName(k.value, what);
      } catch (e) {
        warn((e as Error).message);
        return undefined;
      }
      return (method) => method === name;
    }
  }
}

type StatusCond = (status: number) => boolean;

function compileResponseMatch(m: ResponseMatch | undefined): StatusCond | undefined {
  const k = m?.match;
  if (!k) return undefined;
  switch (k.$case) {
    case "all":
    case "any": {
      const cs = k.value.matches.map(compileResponseMatch).filter((c) => c !== undefined);
      if (cs.length === 0) return undefined;
      return k.$case === "all" ? (s) => cs.every((c) => c(s)) : (s) => cs.some((c) => c(s));
    }
    case "not": {
      const c = compileResponseMatch(k.value);
      return c ? (s) => !c(s) : undefined;
    }
    case "status": {
      const { min, max } = k.value;
      if (!(min >= 100 && min <= 999 && max >= 100 && max <= 999)) return undefined;
      return (s) => s >= min && s <= max;
    }
  }
}

/** Compiles a profile; never throws for content Linkerd would drop (see `warnings`). */
export function compileProfile(p: DestinationProfile, clock: Clock): CompiledProfile {
  const warnings: string[] = [];
  const warn = (w: string) => warnings.push(w);
  let budget: RetryBudget | undefined;
  try {
    const cfg = retryBudgetConfig(p.retryBudget);
    if (cfg) budget = new RetryBudget(cfg, clock);
  } catch (e) {
    warn(`retry budget ignored: ${(e as Error).message}`);
  }
  const routes: ProfileRoute[] = [];
  p.routes.forEach((r, i) => {
    const name = r.metricsLabels["route"] ?? "";
    const what = `profile ${p.fullyQualifiedName} route ${name || i}`;
    const cond = compileCondition(r.condition, warn, `${what} condition`);
    if (!cond) {
      warn(`${what} dropped: no usable condition`);
      return;
    }
    const classes = r.responseClasses.flatMap((c, j) => {
      const m = compileResponseMatch(c.condition);
      if (!m) {
        warn(`${what} response class ${j} dropped: no usable condition`);
        return [];
      }
      return [{ match: m, failure: c.isFailure }];
    });
    const classifier: ResponseClassifier | undefined = classes.length === 0 ? undefined : (status) => {
      for (const c of classes) if (c.match(status)) return c.failure;
      return undefined;
    };
    let timeoutMs: number | undefined;
    try {
      timeoutMs = durationMs(r.timeout, `${what} timeout`) || undefined;
    } catch (e) {
      warn(`${what} timeout ignored: ${(e as Error).message}`);
    }
    let retry = undefined;
    if (r.isRetryable) {
      if (budget) retry = profileRetryPolicy(budget, classifier);
      else warn(`${what} is retryable but the profile has no valid retry budget`);
    }
    routes.push({
      name,
      labels: r.metricsLabels,
      classifier,
      plan: { timeouts: timeoutMs ? { requestMs: timeoutMs } : NO_TIMEOUTS, retry },
      matches: cond,
    });
  });
  const overrides = p.dstOverrides.flatMap((d) => {
    if (d.weight === 0) return [];
    if (!/^[^\s/]+:\d+$/.test(d.authority)) {
      warn(`dst_override ${JSON.stringify(d.authority)} dropped: not host:port`);
      return [];
    }
    let backendRef: RouteMeta | undefined;
    try {
      backendRef = d.backendRef ? routeMeta(d.backendRef, "dst_override") : undefined;
    } catch {
      backendRef = undefined;
    }
    return [{ backend: { authority: d.authority, weight: d.weight, backendRef }, weight: d.weight }];
  });
  return new CompiledProfile(
    p.fullyQualifiedName,
    p.opaqueProtocol,
    p.endpoint ? endpointFromWire(p.endpoint) : undefined,
    routes,
    overrides.length > 0 ? Distribution.randomAvailable(overrides) : undefined,
    budget,
    warnings,
  );
}
