/**
 * Flags of the proxy injector (`control/main.ts injector`) and of the offline `inject` CLI, parsed
 * into resolved options. Pure: main.ts and cli.ts pass in the arguments and the environment.
 * Every value the patch depends on is checked here, so a typo fails at startup with the flag
 * named rather than producing pods that cannot start.
 */
import { DEFAULT_CLUSTER_DOMAIN, DEFAULT_TRUST_DOMAIN } from "../../proto/control_plane.ts";
import { Annotations } from "../../proto/annotations.ts";
import { DEFAULT_INBOUND_POLICIES, type DefaultInboundPolicy } from "../../proto/env.ts";
import { DurationError, parseDurationMs } from "../../proto/go_duration.ts";
import { IpParseError, toIpNetwork } from "../../proto/ip.ts";
import { parsePortRanges, PortListError } from "../../proto/port_list.ts";
import { flag, FlagError, type Flags, type FlagSpec, parseFlags } from "../flags/flags.ts";
import { HostPortError, splitHostPort } from "../flags/host_port.ts";
import { Ports } from "../../proto/ports.ts";
import { defaultInjectorConfig, type InjectorConfig, type ResourceSpec } from "./config.ts";
import { checkOverrideValue } from "./overrides.ts";
import { imageTag } from "./image_tag.ts";

/** The injector's config before the trust anchors are read and the sidecar mode is known. */
export type BaseConfig = Omit<InjectorConfig, "trustAnchorsPem" | "nativeSidecars">;

export interface InjectorOptions {
  webhook: { hostname: string; port: number; certFile: string; keyFile: string };
  admin: { hostname: string; port: number };
  kubeconfig: string | undefined;
  trustAnchorsFile: string;
  /** "auto": from the API server's version at startup. */
  nativeSidecar: "auto" | boolean;
  /** How long an admission waits for a namespace the cache has not seen yet. */
  namespaceWaitMs: number;
  base: BaseConfig;
}

export interface CliOptions {
  /** A file path, or "-" for standard input. */
  input: string;
  trustAnchorsFile: string;
  nativeSidecar: boolean;
  base: BaseConfig;
}

export { FlagError };

export const DEFAULT_TLS_DIR = "/var/run/weft/tls";
export const DEFAULT_TRUST_ANCHORS_FILE = "/var/run/weft/identity/trust-roots/ca-bundle.crt";

const PROXY_FLAGS_USAGE =
  `  --controller-namespace=weft          control-plane namespace (env LINKERD_NAMESPACE)
  --cluster-domain=cluster.local --identity-trust-domain=cluster.local   (alias --trust-domain)
  --trust-anchors-file=${DEFAULT_TRUST_ANCHORS_FILE}
  --proxy-image=localhost/weft:dev --image-pull-policy=Never|IfNotPresent|Always
  --proxy-version=TAG                   recorded in linkerd.io/proxy-version (default: --proxy-image's tag)
  --proxy-command="weft-proxy" --init-command="weft-init"
  --await-command="weft-await --timeout=120s --port=${Ports.proxyAdmin}" --sleep-command="weft-await sleep"
                                        (words split on spaces, or a JSON array of strings)
  --default-inbound-policy=all-unauthenticated --cluster-networks=10.0.0.0/8,...
  --disable-ipv6=false                  true: neither redirect nor proxy pods' IPv6 traffic
  --default-opaque-ports=25,587,3306,... --ignore-inbound-ports= --ignore-outbound-ports=   (ports, ranges)
  --proxy-log-level=warn,linkerd=info,weft=info --proxy-log-format=plain|json
  --proxy-cpu-request=20m --proxy-cpu-limit= --proxy-memory-request=32Mi --proxy-memory-limit=256Mi
  --proxy-uid=2102
  --trusted-gateway-identities=ID,...   identities proxies let forward a caller's identity
                                        (multicluster gateways; default none)`;

export const INJECTOR_USAGE = `usage: control/main.ts injector [flags]
  --addr=0.0.0.0:8443                   HTTPS AdmissionReview webhook, path /inject
  --admin-addr=0.0.0.0:${Ports.injectorAdmin}             /live /ready /metrics
  --tls-dir=${DEFAULT_TLS_DIR}          tls.crt + tls.key, reloaded when they change
  --native-sidecar=auto|true|false      auto: native sidecars when the API server is >= 1.29
  --excluded-namespaces=kube-system,<controller-namespace>
  --namespace-wait=1s                   wait for a namespace the cache has not seen yet
  --kubeconfig=PATH                     (env KUBECONFIG; in-cluster config when unset)
${PROXY_FLAGS_USAGE}`;

export const CLI_USAGE =
  `usage: deno task inject [FILE|-] [flags]   (injects Pods and pod templates; prints YAML)
  --native-sidecar=true|false
${PROXY_FLAGS_USAGE}`;

const PROXY_FLAGS: readonly FlagSpec[] = [
  flag("controller-namespace", { env: "LINKERD_NAMESPACE" }),
  flag("cluster-domain"),
  flag("identity-trust-domain"),
  flag("trust-anchors-file"),
  flag("proxy-image"),
  flag("image-pull-policy"),
  flag("proxy-version"),
  flag("proxy-command"),
  flag("init-command"),
  flag("await-command"),
  flag("sleep-command"),
  flag("native-sidecar"),
  flag("default-inbound-policy"),
  flag("cluster-networks"),
  flag("disable-ipv6", { switch: true }),
  flag("default-opaque-ports"),
  flag("ignore-inbound-ports"),
  flag("ignore-outbound-ports"),
  flag("proxy-log-level"),
  flag("proxy-log-format"),
  flag("proxy-cpu-request"),
  flag("proxy-cpu-limit"),
  flag("proxy-memory-request"),
  flag("proxy-memory-limit"),
  flag("proxy-uid"),
  flag("trusted-gateway-identities"),
];
const SERVER_FLAGS: readonly FlagSpec[] = [
  flag("addr"),
  flag("admin-addr"),
  flag("tls-dir"),
  flag("excluded-namespaces"),
  flag("namespace-wait"),
  flag("kubeconfig", { env: "KUBECONFIG" }),
];

type Env = Record<string, string | undefined>;

function hostPort(text: string, flag: string): { hostname: string; port: number } {
  try {
    const { host, port } = splitHostPort(text, `--${flag}`);
    return { hostname: host, port };
  } catch (e) {
    throw e instanceof HostPortError ? new FlagError(e.message) : e;
  }
}

function command(text: string, flag: string): string[] {
  let words: unknown;
  if (text.trim().startsWith("[")) {
    try {
      words = JSON.parse(text);
    } catch (e) {
      throw new FlagError(`--${flag}: not a JSON array: ${(e as Error).message}`);
    }
  } else words = text.trim().split(/\s+/).filter((w) => w !== "");
  if (!Array.isArray(words) || words.length === 0 || words.some((w) => typeof w !== "string" || w === "")) {
    throw new FlagError(`--${flag}: want a non-empty command (words, or a JSON array of strings)`);
  }
  return words as string[];
}

/** Ports and ranges (the shared port list grammar), expanded to the ports they cover. */
function ports(text: string, flag: string): number[] {
  try {
    return parsePortRanges(text, `--${flag}`).flatMap((r) =>
      Array.from({ length: r.to - r.from + 1 }, (_, i) => r.from + i)
    );
  } catch (e) {
    throw e instanceof PortListError ? new FlagError(e.message) : e;
  }
}

function durationMs(text: string, flag: string): number {
  try {
    return parseDurationMs(text, `--${flag}`);
  } catch (e) {
    if (e instanceof DurationError) throw new FlagError(e.message);
    throw e;
  }
}

function dnsName(text: string, flag: string): string {
  if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/.test(text) || text.length > 253) {
    throw new FlagError(`--${flag}: "${text}" is not a DNS name`);
  }
  return text;
}

function viaAnnotation(text: string, flag: string, annotation: string): string {
  const p = checkOverrideValue(annotation, text);
  if (p) throw new FlagError(`--${flag}: "${text}" is invalid: ${p.why}; want ${p.form}`);
  return text;
}

function parseProxyFlags(f: Flags): { base: BaseConfig; native?: string; anchors: string } {
  const d = defaultInjectorConfig("");
  const get = (k: string) => f.get(k);
  const controlPlaneNamespace = dnsName(
    get("controller-namespace") ?? d.controlPlaneNamespace,
    "controller-namespace",
  );
  const pullPolicy = get("image-pull-policy") ?? d.imagePullPolicy;
  if (!["Always", "IfNotPresent", "Never"].includes(pullPolicy)) {
    throw new FlagError(`--image-pull-policy: "${pullPolicy}" is not Always, IfNotPresent or Never`);
  }
  const policy = get("default-inbound-policy") ?? d.defaultInboundPolicy;
  if (!(DEFAULT_INBOUND_POLICIES as readonly string[]).includes(policy)) {
    throw new FlagError(
      `--default-inbound-policy: "${policy}" is not one of ${DEFAULT_INBOUND_POLICIES.join(", ")}`,
    );
  }
  const networks = get("cluster-networks")?.split(",").map((s) => s.trim()).filter((s) => s !== "") ??
    d.clusterNetworks;
  for (const n of networks) {
    try {
      toIpNetwork(n);
    } catch (e) {
      throw new FlagError(`--cluster-networks: ${e instanceof IpParseError ? e.message : String(e)}`);
    }
  }
  const logFormat = get("proxy-log-format") ?? d.logFormat;
  if (logFormat !== "plain" && logFormat !== "json") {
    throw new FlagError(`--proxy-log-format: "${logFormat}" is not plain or json`);
  }
  const resources: ResourceSpec = { ...d.resources };
  for (
    const [flag, field, ann] of [
      ["proxy-cpu-request", "cpuRequest", Annotations.proxyCpuRequest],
      ["proxy-cpu-limit", "cpuLimit", Annotations.proxyCpuLimit],
      ["proxy-memory-request", "memoryRequest", Annotations.proxyMemoryRequest],
      ["proxy-memory-limit", "memoryLimit", Annotations.proxyMemoryLimit],
    ] as const
  ) {
    const v = get(flag);
    if (v === undefined) continue;
    if (v === "") delete resources[field];
    else resources[field] = viaAnnotation(v, flag, ann);
  }
  const uid = get("proxy-uid");
  const image = get("proxy-image") ?? d.image;
  if (!/^[a-z0-9][a-z0-9._\-/:@]*$/.test(image)) {
    throw new FlagError(`--proxy-image: "${image}" is not an image reference`);
  }
  const base: BaseConfig = {
    // The proxy image's tag by default: a control plane deployed with another image stamps it on new pods.
    version: get("proxy-version") ?? imageTag(image) ?? d.version,
    controlPlaneNamespace,
    clusterDomain: dnsName(get("cluster-domain") ?? DEFAULT_CLUSTER_DOMAIN, "cluster-domain"),
    trustDomain: dnsName(get("identity-trust-domain") ?? DEFAULT_TRUST_DOMAIN, "identity-trust-domain"),
    image,
    imagePullPolicy: pullPolicy as BaseConfig["imagePullPolicy"],
    proxyCommand: get("proxy-command") !== undefined
      ? command(get("proxy-command")!, "proxy-command")
      : d.proxyCommand,
    initCommand: get("init-command") !== undefined
      ? command(get("init-command")!, "init-command")
      : d.initCommand,
    awaitCommand: get("await-command") !== undefined
      ? command(get("await-command")!, "await-command")
      : d.awaitCommand,
    sleepCommand: get("sleep-command") !== undefined
      ? command(get("sleep-command")!, "sleep-command")
      : d.sleepCommand,
    proxyUid: uid !== undefined ? Number(viaAnnotation(uid, "proxy-uid", Annotations.proxyUid)) : d.proxyUid,
    defaultInboundPolicy: policy as DefaultInboundPolicy,
    clusterNetworks: networks,
    ipv6: !f.switch("disable-ipv6", !d.ipv6),
    opaquePorts: get("default-opaque-ports") !== undefined
      ? ports(get("default-opaque-ports")!, "default-opaque-ports")
      : d.opaquePorts,
    ignoreInboundPorts: ports(get("ignore-inbound-ports") ?? "", "ignore-inbound-ports"),
    ignoreOutboundPorts: ports(get("ignore-outbound-ports") ?? "", "ignore-outbound-ports"),
    logLevel: viaAnnotation(
      get("proxy-log-level") ?? d.logLevel,
      "proxy-log-level",
      Annotations.proxyLogLevel,
    ),
    logFormat,
    resources,
    excludedNamespaces: ["kube-system", controlPlaneNamespace],
    trustedGatewayIdentities: (get("trusted-gateway-identities") ?? "").split(",").map((s) => s.trim())
      .filter((s) => s !== "").map((id) => dnsName(id, "trusted-gateway-identities")),
  };
  return {
    base,
    native: get("native-sidecar"),
    anchors: get("trust-anchors-file") ?? DEFAULT_TRUST_ANCHORS_FILE,
  };
}

export function parseInjectorArgs(args: string[], env: Env): InjectorOptions {
  const { flags } = parseFlags(args, [...SERVER_FLAGS, ...PROXY_FLAGS], { env, usage: INJECTOR_USAGE });
  const { base, native, anchors } = parseProxyFlags(flags);
  const excluded = flags.get("excluded-namespaces");
  if (excluded !== undefined) {
    base.excludedNamespaces = excluded.split(",").map((s) => s.trim()).filter((s) => s !== "")
      .map((n) => dnsName(n, "excluded-namespaces"));
  }
  if (native !== undefined && !["auto", "true", "false"].includes(native)) {
    throw new FlagError(`--native-sidecar: "${native}" is not auto, true or false`);
  }
  const tlsDir = (flags.get("tls-dir") ?? DEFAULT_TLS_DIR).replace(/\/+$/, "");
  return {
    webhook: {
      ...hostPort(flags.get("addr") ?? "0.0.0.0:8443", "addr"),
      certFile: `${tlsDir}/tls.crt`,
      keyFile: `${tlsDir}/tls.key`,
    },
    admin: hostPort(flags.get("admin-addr") ?? `0.0.0.0:${Ports.injectorAdmin}`, "admin-addr"),
    kubeconfig: flags.get("kubeconfig"),
    trustAnchorsFile: anchors,
    nativeSidecar: native === undefined || native === "auto" ? "auto" : native === "true",
    namespaceWaitMs: durationMs(flags.get("namespace-wait") ?? "1s", "namespace-wait"),
    base,
  };
}

export function parseCliArgs(args: string[], env: Env): CliOptions {
  const { flags, positional: rest } = parseFlags(args, PROXY_FLAGS, {
    env,
    positional: true,
    usage: CLI_USAGE,
  });
  if (rest.length > 1) {
    throw new FlagError(`want at most one input file, got ${rest.join(" ")}\n${CLI_USAGE}`);
  }
  const { base, native } = parseProxyFlags(flags);
  const anchors = flags.get("trust-anchors-file");
  if (anchors === undefined) {
    throw new FlagError(
      "--trust-anchors-file is required: injected proxies need the mesh's trust anchors (PEM)",
    );
  }
  if (native !== undefined && native !== "true" && native !== "false") {
    throw new FlagError(`--native-sidecar: "${native}" is not true or false`);
  }
  // Offline injection is explicit: no namespace is off limits.
  base.excludedNamespaces = [];
  return { input: rest[0] ?? "-", trustAnchorsFile: anchors, nativeSidecar: native !== "false", base };
}
