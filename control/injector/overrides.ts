/**
 * `config.linkerd.io/*` overrides on a pod or its namespace, parsed and validated. An invalid
 * value is never silently ignored: each problem names the annotation, what it says and the
 * accepted form.
 */
import { Annotations } from "../../proto/annotations.ts";
import { DEFAULT_INBOUND_POLICIES, type DefaultInboundPolicy } from "../../proto/env.ts";
import { DurationError, parseDurationMs } from "../../proto/go_duration.ts";
import { IpParseError, toIpNetwork } from "../../proto/ip.ts";
import { parsePortList, type PortRange, resolvePortList } from "../../proto/port_list.ts";
import type { ResourceSpec } from "./config.ts";

export interface Overrides {
  resources: ResourceSpec;
  logLevel?: string;
  logFormat?: "plain" | "json";
  /** HTTP access log format (config.linkerd.io/access-log), written by the proxy to stderr. */
  accessLog?: "apache" | "json";
  skipInboundPorts?: PortRange[];
  skipOutboundPorts?: PortRange[];
  skipSubnets?: string[];
  opaquePorts?: PortRange[];
  defaultInboundPolicy?: DefaultInboundPolicy;
  proxyUid?: number;
  proxyGid?: number;
  proxyAwait?: boolean;
  waitBeforeExitSeconds?: number;
  nativeSidecar?: boolean;
  inboundConnectTimeout?: string;
  outboundConnectTimeout?: string;
  shutdownGracePeriod?: string;
  /** POST /shutdown on the admin port (for Jobs without native sidecars); off by default. */
  adminShutdown?: boolean;
  /** The proxy is a multicluster gateway (config.linkerd.io/enable-gateway). */
  gateway?: boolean;
  image?: string;
  imagePullPolicy?: "Always" | "IfNotPresent" | "Never";
}

export interface OverrideProblem {
  annotation: string;
  value: string;
  message: string;
  /** Only some entries of a port list were bad; the others are in the overrides. */
  partial?: boolean;
}

const QUANTITY = /^(\d+(\.\d+)?|\.\d+)(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$/;
const LOG_LEVEL = /^(trace|debug|info|warn|error|off)$/;

class Problem extends Error {}

/** Bad entries of a port list read leniently: reported, while the good entries apply. */
class PartialProblem extends Problem {}

/** How port names resolve: against the pod's container ports; absent when there is no pod (flags). */
export interface PortNames {
  portOf: (name: string) => number | undefined;
  /**
   * Strict (the pod's own annotation): every bad entry and every name the pod lacks refuses the
   * value. Lenient (its namespace's, which serves every pod there): a name this pod lacks lists
   * nothing, and bad entries are reported but the good ones apply, as the destination and the
   * policy controller read the same value.
   */
  strict: boolean;
}

/**
 * The shared port list grammar; names resolve against the pod; the ranges go to `keep`. Every bad
 * entry is named: read strictly, the pod is refused rather than injected with a list that silently
 * lost an entry; read leniently, the good entries are kept and the bad ones reported.
 */
function portRanges(
  value: string,
  what: string,
  names: PortNames | undefined,
  keep: (ranges: PortRange[]) => void,
): void {
  const list = parsePortList(value, what);
  const reasons = list.errors.map((e) => e.reason);
  if (names) {
    if (names.strict) reasons.push(...resolvePortList(list, names.portOf).errors.map((e) => e.reason));
  } else {
    for (const e of list.entries) {
      if (e.kind === "name") {
        reasons.push(`"${e.name}" is a port name, which only a pod's annotation can use`);
      }
    }
  }
  if (reasons.length > 0 && (!names || names.strict)) throw new Problem(reasons.join("; "));
  keep(resolvePortList(list, names?.portOf ?? (() => undefined)).ranges);
  if (reasons.length > 0) throw new PartialProblem(reasons.join("; "));
}

function parseLogLevel(value: string): string {
  for (const directive of value.split(",")) {
    const d = directive.trim();
    const level = d.includes("=") ? d.slice(d.indexOf("=") + 1) : d;
    const target = d.includes("=") ? d.slice(0, d.indexOf("=")) : "x";
    if (!LOG_LEVEL.test(level) || !/^[A-Za-z0-9_:.-]+$/.test(target)) {
      throw new Problem(`directive "${d}" is not <level> or <target>=<level>`);
    }
  }
  return value;
}

function parseInt32(value: string): number {
  if (!/^\d{1,10}$/.test(value) || Number(value) > 2147483647) {
    throw new Problem("not a non-negative integer");
  }
  return Number(value);
}

function parseBool(value: string): boolean {
  if (value === "true") return true;
  if (value === "false") return false;
  throw new Problem("not true or false");
}

interface Spec {
  key: string;
  form: string;
  apply(value: string, into: Overrides, names?: PortNames): void;
}

const PORT_LIST_FORM = "comma-separated ports, ranges or container port names, e.g. 25,8000-8080,mysql";

const SPECS: Spec[] = [
  ...(
    [
      ["proxyCpuRequest", "cpuRequest"],
      ["proxyCpuLimit", "cpuLimit"],
      ["proxyMemoryRequest", "memoryRequest"],
      ["proxyMemoryLimit", "memoryLimit"],
      ["proxyEphemeralStorageRequest", "ephemeralStorageRequest"],
      ["proxyEphemeralStorageLimit", "ephemeralStorageLimit"],
    ] as const
  ).map(([ann, field]): Spec => ({
    key: Annotations[ann],
    form: "a Kubernetes quantity such as 100m, 0.5, 64Mi or 1Gi",
    apply(v, o) {
      if (!QUANTITY.test(v)) throw new Problem("not a quantity");
      o.resources[field] = v;
    },
  })),
  {
    key: Annotations.proxyLogLevel,
    form: "comma-separated <level> or <target>=<level>, level one of trace|debug|info|warn|error|off",
    apply: (v, o) => o.logLevel = parseLogLevel(v),
  },
  {
    key: Annotations.proxyLogFormat,
    form: "plain or json",
    apply(v, o) {
      if (v !== "plain" && v !== "json") throw new Problem("unknown format");
      o.logFormat = v;
    },
  },
  {
    key: Annotations.accessLog,
    form: "apache or json",
    apply(v, o) {
      if (v !== "apache" && v !== "json") throw new Problem("unknown format");
      o.accessLog = v;
    },
  },
  {
    key: Annotations.skipInboundPorts,
    form: PORT_LIST_FORM,
    apply: (v, o, names) => portRanges(v, Annotations.skipInboundPorts, names, (r) => o.skipInboundPorts = r),
  },
  {
    key: Annotations.skipOutboundPorts,
    form: PORT_LIST_FORM,
    apply: (v, o, names) =>
      portRanges(v, Annotations.skipOutboundPorts, names, (r) => o.skipOutboundPorts = r),
  },
  {
    key: Annotations.opaquePorts,
    form: PORT_LIST_FORM,
    apply: (v, o, names) => portRanges(v, Annotations.opaquePorts, names, (r) => o.opaquePorts = r),
  },
  {
    key: Annotations.skipSubnets,
    form: "comma-separated CIDRs, e.g. 10.0.0.0/8,fd00::/8",
    apply(v, o) {
      const nets = v.split(",").map((s) => s.trim()).filter((s) => s !== "");
      if (nets.length === 0) throw new Problem("the list is empty");
      for (const n of nets) {
        try {
          toIpNetwork(n);
        } catch (e) {
          throw new Problem(e instanceof IpParseError ? e.message : String(e));
        }
      }
      o.skipSubnets = nets;
    },
  },
  {
    key: Annotations.defaultInboundPolicy,
    form: DEFAULT_INBOUND_POLICIES.join(" | "),
    apply(v, o) {
      if (!(DEFAULT_INBOUND_POLICIES as readonly string[]).includes(v)) throw new Problem("unknown policy");
      o.defaultInboundPolicy = v as DefaultInboundPolicy;
    },
  },
  {
    key: Annotations.proxyUid,
    form: "a non-negative integer UID",
    apply: (v, o) => o.proxyUid = parseInt32(v),
  },
  {
    key: Annotations.proxyGid,
    form: "a non-negative integer GID",
    apply: (v, o) => o.proxyGid = parseInt32(v),
  },
  {
    key: Annotations.proxyAwait,
    form: "enabled or disabled",
    apply(v, o) {
      if (v !== "enabled" && v !== "disabled") throw new Problem("unknown value");
      o.proxyAwait = v === "enabled";
    },
  },
  {
    key: Annotations.proxyAdminShutdown,
    form: "enabled or disabled",
    apply(v, o) {
      if (v !== "enabled" && v !== "disabled") throw new Problem("unknown value");
      o.adminShutdown = v === "enabled";
    },
  },
  {
    key: Annotations.enableGateway,
    form: "true or false",
    apply: (v, o) => o.gateway = parseBool(v),
  },
  {
    key: Annotations.waitBeforeExitSeconds,
    form: "a non-negative integer number of seconds",
    apply: (v, o) => o.waitBeforeExitSeconds = parseInt32(v),
  },
  {
    key: Annotations.enableNativeSidecar,
    form: "true or false",
    apply: (v, o) => o.nativeSidecar = parseBool(v),
  },
  ...(
    [
      ["proxyInboundConnectTimeout", "inboundConnectTimeout"],
      ["proxyOutboundConnectTimeout", "outboundConnectTimeout"],
      ["shutdownGracePeriod", "shutdownGracePeriod"],
    ] as const
  ).map(([ann, field]): Spec => ({
    key: Annotations[ann],
    form: "a duration such as 500ms, 1.5s, 2m or 1h30m",
    // Go's grammar, as Linkerd reads these annotations; written for the proxy (whose variables take
    // whole units, linkerd2-proxy's format) as whole milliseconds.
    apply(v, o) {
      try {
        o[field] = `${Math.trunc(parseDurationMs(v, Annotations[ann]))}ms`;
      } catch (e) {
        throw e instanceof DurationError ? new Problem(e.reason) : e;
      }
    },
  })),
  {
    key: Annotations.proxyImage,
    form: "an image reference",
    apply(v, o) {
      if (!/^[a-z0-9][a-z0-9._\-/:@]*$/.test(v)) throw new Problem("not an image reference");
      o.image = v;
    },
  },
  {
    key: Annotations.imagePullPolicy,
    form: "Always | IfNotPresent | Never",
    apply(v, o) {
      if (v !== "Always" && v !== "IfNotPresent" && v !== "Never") throw new Problem("unknown policy");
      o.imagePullPolicy = v;
    },
  },
];

export const SUPPORTED_OVERRIDES: readonly string[] = SPECS.map((s) => s.key);

/**
 * Checks one value in the form an annotation takes (for flags that set the same defaults):
 * undefined when valid, else what is wrong and the accepted form.
 */
export function checkOverrideValue(
  annotation: string,
  value: string,
): { why: string; form: string } | undefined {
  const spec = SPECS.find((s) => s.key === annotation);
  if (!spec) throw new Error(`no override ${annotation}`);
  try {
    spec.apply(value.trim(), { resources: {} });
    return undefined;
  } catch (e) {
    if (!(e instanceof Problem)) throw e;
    return { why: e.message, form: spec.form };
  }
}

/**
 * Parses every supported override found in `annotations`; unknown keys are left alone. Port names
 * in port lists resolve with `names` (the pod's container ports).
 */
export function parseOverrides(
  annotations: Record<string, string>,
  names?: PortNames,
): { overrides: Overrides; problems: OverrideProblem[] } {
  const overrides: Overrides = { resources: {} };
  const problems: OverrideProblem[] = [];
  for (const spec of SPECS) {
    const value = annotations[spec.key];
    if (value === undefined) continue;
    try {
      spec.apply(value.trim(), overrides, names);
    } catch (e) {
      if (!(e instanceof Problem)) throw e;
      const partial = e instanceof PartialProblem;
      problems.push({
        annotation: spec.key,
        value,
        message: partial
          ? `annotation ${spec.key}="${value}" has bad entries, ignored: ${e.message}; want ${spec.form}`
          : `annotation ${spec.key}="${value}" is invalid: ${e.message}; want ${spec.form}`,
        ...(partial ? { partial } : {}),
      });
    }
  }
  return { overrides, problems };
}
