/**
 * The injection patch: a pure function of the pod, its namespace and the injector's config,
 * returning RFC 6902 JSON patch operations (or the problems that make the pod unacceptable).
 */
import type { V1Container, V1EnvVar, V1Pod, V1Probe } from "@kubernetes/client-node";
import { Annotations, Labels } from "../../proto/annotations.ts";
import { ProxyEnv, WeftProxyEnv } from "../../proto/env.ts";
import { Ports } from "../../proto/ports.ts";
import { destinationContext, policyWorkload } from "../../proto/proxy_workload.ts";
import { controlPlaneNames, type InjectorConfig, type ResourceSpec } from "./config.ts";
import { INIT_CONTAINER, type NamespaceLike, PROXY_CONTAINER } from "./decision.ts";
import { type OverrideProblem, type Overrides, parseOverrides } from "./overrides.ts";
import { formatPortRanges, portInRanges, type PortRange } from "../../proto/port_list.ts";
import { initIpv6Args, proxyListenAddrs } from "../../proto/ip_families.ts";
import {
  TRUST_ROOTS_DIR_ENV,
  TRUST_ROOTS_MOUNT_PATH,
  TRUST_ROOTS_VOLUME,
  trustRootsConfigMapFor,
} from "../../proto/trust_roots.ts";

export type JsonPatchOp = { op: "add" | "replace"; path: string; value: unknown };

export type PatchResult =
  | { ok: true; patch: JsonPatchOp[]; warnings: string[]; native: boolean }
  | { ok: false; problems: OverrideProblem[] };

export const IDENTITY_DIR = "/var/run/linkerd/identity/end-entity";
export const TOKEN_DIR = "/var/run/secrets/tokens";
export const TOKEN_FILE = `${TOKEN_DIR}/linkerd-identity-token`;
const VOL_END_ENTITY = "linkerd-identity-end-entity";
const VOL_TOKEN = "linkerd-identity-token";
const VOL_XTABLES = "linkerd-proxy-init-xtables-lock";

/** JSON pointer escaping of one path segment. */
function seg(s: string): string {
  return s.replaceAll("~", "~0").replaceAll("/", "~1");
}

/** Config annotations of the namespace apply to its pods unless the pod sets its own. */
function configAnnotations(annotations: Record<string, string> | undefined): Record<string, string> {
  return Object.fromEntries(
    Object.entries(annotations ?? {}).filter(([k]) =>
      k.startsWith("config.linkerd.io/") || k.startsWith("config.alpha.linkerd.io/") ||
      k.startsWith("config.beta.linkerd.io/")
    ),
  );
}

/** The pod's container port called `name` (app containers first, then init containers). */
export function namedContainerPort(pod: V1Pod, name: string): number | undefined {
  for (const list of [pod.spec?.containers, pod.spec?.initContainers]) {
    for (const c of list ?? []) {
      for (const p of c.ports ?? []) if (p.name === name) return p.containerPort;
    }
  }
  return undefined;
}

/** Ports the app listens on: container ports and probe ports (named probe ports resolved). */
export function inboundPorts(pod: V1Pod): number[] {
  const ports = new Set<number>();
  const byName = new Map<string, number>();
  for (const c of pod.spec?.containers ?? []) {
    for (const p of c.ports ?? []) {
      if ((p.protocol ?? "TCP") !== "TCP") continue;
      ports.add(p.containerPort);
      if (p.name) byName.set(p.name, p.containerPort);
    }
  }
  const probePort = (probe: V1Probe | undefined) => {
    const port = probe?.httpGet?.port ?? probe?.tcpSocket?.port ?? probe?.grpc?.port;
    if (port === undefined) return;
    const n = typeof port === "number" ? port : (/^\d+$/.test(port) ? Number(port) : byName.get(port));
    if (n !== undefined) ports.add(n);
  };
  for (const c of pod.spec?.containers ?? []) {
    probePort(c.livenessProbe);
    probePort(c.readinessProbe);
    probePort(c.startupProbe);
  }
  return [...ports].sort((a, b) => a - b);
}

/** The owning workload for the `linkerd.io/proxy-<kind>` label (a ReplicaSet stands for its Deployment). */
function owner(pod: V1Pod): { kind: string; name: string } | undefined {
  const ref = pod.metadata?.ownerReferences?.find((r) => r.controller) ?? pod.metadata?.ownerReferences?.[0];
  if (!ref) return undefined;
  const hash = pod.metadata?.labels?.["pod-template-hash"];
  if (ref.kind === "ReplicaSet" && hash && ref.name.endsWith(`-${hash}`)) {
    return { kind: "deployment", name: ref.name.slice(0, -hash.length - 1) };
  }
  return { kind: ref.kind.toLowerCase(), name: ref.name };
}

function resources(r: ResourceSpec) {
  const requests: Record<string, string> = {}, limits: Record<string, string> = {};
  if (r.cpuRequest) requests.cpu = r.cpuRequest;
  if (r.memoryRequest) requests.memory = r.memoryRequest;
  if (r.ephemeralStorageRequest) requests["ephemeral-storage"] = r.ephemeralStorageRequest;
  if (r.cpuLimit) limits.cpu = r.cpuLimit;
  if (r.memoryLimit) limits.memory = r.memoryLimit;
  if (r.ephemeralStorageLimit) limits["ephemeral-storage"] = r.ephemeralStorageLimit;
  return {
    ...(Object.keys(requests).length ? { requests } : {}),
    ...(Object.keys(limits).length ? { limits } : {}),
  };
}

function fieldEnv(name: string, fieldPath: string): V1EnvVar {
  return { name, valueFrom: { fieldRef: { fieldPath } } };
}

/** Whole CPUs for the proxy's runtime, from the CPU limit (at least 1). */
function coresFromLimit(limit: string | undefined): number {
  if (!limit) return 1;
  const m = limit.match(/^(\d+(?:\.\d+)?)(m?)$/);
  if (!m) return 1;
  const cpus = m[2] === "m" ? Number(m[1]) / 1000 : Number(m[1]);
  return Math.max(1, Math.ceil(cpus));
}

interface Effective {
  cfg: InjectorConfig;
  ov: Overrides;
  opaque: PortRange[];
  skipInbound: PortRange[];
  skipOutbound: PortRange[];
  native: boolean;
  uid: number;
  res: ResourceSpec;
}

function proxyContainer(pod: V1Pod, e: Effective): V1Container {
  const { cfg, ov } = e;
  const names = controlPlaneNames(cfg);
  const ports = inboundPorts(pod);
  const listen = proxyListenAddrs(cfg.ipv6);
  const env: V1EnvVar[] = [
    fieldEnv("_pod_name", "metadata.name"),
    fieldEnv("_pod_ns", "metadata.namespace"),
    fieldEnv("_pod_nodeName", "spec.nodeName"),
    fieldEnv("_pod_sa", "spec.serviceAccountName"),
    { name: ProxyEnv.log, value: ov.logLevel ?? cfg.logLevel },
    { name: ProxyEnv.logFormat, value: ov.logFormat ?? cfg.logFormat },
    // Only when asked, as Linkerd's injector: the proxy logs no requests without it.
    ...(ov.accessLog ? [{ name: ProxyEnv.accessLog, value: ov.accessLog }] : []),
    { name: ProxyEnv.destinationSvcAddr, value: names.destinationAddr },
    { name: ProxyEnv.destinationSvcName, value: names.destinationName },
    { name: ProxyEnv.policySvcAddr, value: names.policyAddr },
    { name: ProxyEnv.policySvcName, value: names.policyName },
    { name: ProxyEnv.identitySvcAddr, value: names.identityAddr },
    { name: ProxyEnv.identitySvcName, value: names.identityName },
    { name: ProxyEnv.policyWorkload, value: policyWorkload("$(_pod_ns)", "$(_pod_name)") },
    {
      name: ProxyEnv.destinationContext,
      value: destinationContext("$(_pod_ns)", "$(_pod_nodeName)", "$(_pod_name)"),
    },
    { name: ProxyEnv.destinationProfileSuffixes, value: `svc.${cfg.clusterDomain}.` },
    { name: ProxyEnv.destinationProfileNetworks, value: cfg.clusterNetworks.join(",") },
    { name: ProxyEnv.policyClusterNetworks, value: cfg.clusterNetworks.join(",") },
    { name: ProxyEnv.inboundDefaultPolicy, value: ov.defaultInboundPolicy ?? cfg.defaultInboundPolicy },
    { name: ProxyEnv.inboundPorts, value: ports.join(",") },
    { name: ProxyEnv.inboundPortsDisableProtocolDetection, value: formatPortRanges(e.opaque) },
    fieldEnv(ProxyEnv.inboundIps, "status.podIPs"),
    // The same choice as init's --ipv6 below: listeners for exactly the families init redirects.
    { name: ProxyEnv.inboundListenAddr, value: listen.inbound },
    { name: ProxyEnv.outboundListenAddrs, value: listen.outbound },
    { name: ProxyEnv.adminListenAddr, value: listen.admin },
    { name: ProxyEnv.controlListenAddr, value: listen.control },
    // Tap is served to this identity only (Linkerd's LINKERD2_PROXY_TAP_SVC_NAME).
    { name: ProxyEnv.tapSvcName, value: names.tapName },
    // Multicluster (issue 23): only gateways the control plane was deployed to trust may forward a
    // caller's identity; none unless asked (`--trusted-gateway-identities`).
    ...(cfg.trustedGatewayIdentities.length > 0
      ? [{
        name: WeftProxyEnv.inboundTrustedGatewayIdentities,
        value: cfg.trustedGatewayIdentities.join(","),
      }]
      : []),
    // Linkerd's gateway proxies (config.linkerd.io/enable-gateway): forward to local Services.
    ...(ov.gateway
      ? [
        { name: ProxyEnv.inboundGatewaySuffixes, value: `svc.${cfg.clusterDomain}.` },
        { name: WeftProxyEnv.inboundGateway, value: "true" },
      ]
      : []),
    { name: ProxyEnv.inboundAcceptKeepalive, value: "10000ms" },
    { name: ProxyEnv.outboundConnectKeepalive, value: "10000ms" },
    ...(ov.inboundConnectTimeout
      ? [{ name: ProxyEnv.inboundConnectTimeout, value: ov.inboundConnectTimeout }]
      : []),
    ...(ov.outboundConnectTimeout
      ? [{ name: ProxyEnv.outboundConnectTimeout, value: ov.outboundConnectTimeout }]
      : []),
    { name: ProxyEnv.controlStreamInitialTimeout, value: "3s" },
    { name: ProxyEnv.controlStreamIdleTimeout, value: "5m" },
    { name: ProxyEnv.controlStreamLifetime, value: "1h" },
    { name: ProxyEnv.cores, value: String(coresFromLimit(e.res.cpuLimit)) },
    // Off unless the pod (or its namespace) asks: a reachable /shutdown is a way to stop the proxy.
    ...(ov.adminShutdown ? [{ name: ProxyEnv.shutdownEndpointEnabled, value: "true" }] : []),
    ...(ov.shutdownGracePeriod
      ? [{ name: ProxyEnv.shutdownGracePeriod, value: ov.shutdownGracePeriod }]
      : []),
    { name: ProxyEnv.identityDir, value: IDENTITY_DIR },
    { name: ProxyEnv.identityTokenFile, value: TOKEN_FILE },
    { name: ProxyEnv.identityTrustAnchors, value: cfg.trustAnchorsPem },
    // The live bundle (issue 21): the anchors above are only where the proxy starts from.
    { name: TRUST_ROOTS_DIR_ENV, value: TRUST_ROOTS_MOUNT_PATH },
    {
      name: ProxyEnv.identityLocalName,
      value: `$(_pod_sa).$(_pod_ns).serviceaccount.identity.${cfg.controlPlaneNamespace}.${cfg.trustDomain}`,
    },
  ];
  const httpProbe = (path: string) => ({ httpGet: { path, port: Ports.proxyAdmin } });
  const c: V1Container = {
    name: PROXY_CONTAINER,
    image: ov.image ?? cfg.image,
    imagePullPolicy: ov.imagePullPolicy ?? cfg.imagePullPolicy,
    command: cfg.proxyCommand,
    env,
    ports: [
      { name: "linkerd-proxy", containerPort: Ports.proxyInbound },
      { name: "linkerd-admin", containerPort: Ports.proxyAdmin },
    ],
    livenessProbe: { ...httpProbe("/live"), initialDelaySeconds: 10, periodSeconds: 10, timeoutSeconds: 1 },
    readinessProbe: { ...httpProbe("/ready"), initialDelaySeconds: 2, periodSeconds: 10, timeoutSeconds: 1 },
    resources: resources(e.res),
    securityContext: {
      runAsUser: e.uid,
      ...(ov.proxyGid !== undefined ? { runAsGroup: ov.proxyGid } : {}),
      runAsNonRoot: true,
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
      capabilities: { drop: ["ALL"] },
      seccompProfile: { type: "RuntimeDefault" },
    },
    terminationMessagePolicy: "FallbackToLogsOnError",
    volumeMounts: [
      { name: VOL_END_ENTITY, mountPath: IDENTITY_DIR },
      { name: VOL_TOKEN, mountPath: TOKEN_DIR, readOnly: true },
      { name: TRUST_ROOTS_VOLUME, mountPath: TRUST_ROOTS_MOUNT_PATH, readOnly: true },
    ],
  };
  if (e.native) {
    c.restartPolicy = "Always";
    // The kubelet starts the app containers only once this probe passes, i.e. the proxy is certified.
    c.startupProbe = { ...httpProbe("/ready"), periodSeconds: 1, failureThreshold: 120, timeoutSeconds: 1 };
  } else {
    const lifecycle: V1Container["lifecycle"] = {};
    // postStart blocks the start of the next containers until the proxy is ready.
    if (ov.proxyAwait ?? true) lifecycle.postStart = { exec: { command: cfg.awaitCommand } };
    if (ov.waitBeforeExitSeconds) {
      lifecycle.preStop = { exec: { command: [...cfg.sleepCommand, String(ov.waitBeforeExitSeconds)] } };
    }
    if (lifecycle.postStart || lifecycle.preStop) c.lifecycle = lifecycle;
  }
  return c;
}

function initContainer(e: Effective): V1Container {
  const { cfg, ov } = e;
  const args = [
    "--incoming-proxy-port",
    String(Ports.proxyInbound),
    "--outgoing-proxy-port",
    String(Ports.proxyOutbound),
    "--proxy-uid",
    String(e.uid),
    ...(ov.proxyGid !== undefined ? ["--proxy-gid", String(ov.proxyGid)] : []),
    "--inbound-ports-to-ignore",
    formatPortRanges([{ from: Ports.proxyControl, to: Ports.proxyControl }, {
      from: Ports.proxyAdmin,
      to: Ports.proxyAdmin,
    }, ...e.skipInbound]),
    ...(e.skipOutbound.length ? ["--outbound-ports-to-ignore", formatPortRanges(e.skipOutbound)] : []),
    ...(ov.skipSubnets ? ["--subnets-to-ignore", ov.skipSubnets.join(",")] : []),
    ...initIpv6Args(cfg.ipv6),
  ];
  return {
    name: INIT_CONTAINER,
    image: ov.image ?? cfg.image,
    imagePullPolicy: ov.imagePullPolicy ?? cfg.imagePullPolicy,
    command: cfg.initCommand,
    args,
    resources: { requests: { cpu: "10m", memory: "16Mi" }, limits: { memory: "64Mi" } },
    securityContext: {
      // iptables needs root inside the pod's network namespace, and only these two capabilities.
      runAsUser: 0,
      runAsNonRoot: false,
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { add: ["NET_ADMIN", "NET_RAW"], drop: ["ALL"] },
      seccompProfile: { type: "RuntimeDefault" },
    },
    terminationMessagePolicy: "FallbackToLogsOnError",
    volumeMounts: [{ name: VOL_XTABLES, mountPath: "/run" }],
  };
}

// The anchors are fixed for the injector's lifetime, so their digest is computed once, not per pod.
let anchorsDigest: { pem: string; hex: Promise<string> } | undefined;

function anchorsSha256Hex(pem: string): Promise<string> {
  if (anchorsDigest?.pem !== pem) {
    const hex = crypto.subtle.digest("SHA-256", new TextEncoder().encode(pem)).then((d) =>
      Array.from(new Uint8Array(d), (b) => b.toString(16).padStart(2, "0")).join("")
    );
    anchorsDigest = { pem, hex };
  }
  return anchorsDigest.hex;
}

/**
 * Builds the patch. Problems in the pod's own annotations refuse the pod; problems in the
 * namespace's are reported as warnings and that override is ignored, because refusing would
 * stop every rollout in the namespace over one bad namespace annotation.
 */
export async function buildPatch(
  pod: V1Pod,
  ns: NamespaceLike | undefined,
  cfg: InjectorConfig,
): Promise<PatchResult> {
  const podAnn = configAnnotations(pod.metadata?.annotations);
  const nsAnn = configAnnotations(ns?.metadata?.annotations);
  const portOf = (name: string) => namedContainerPort(pod, name);
  const podParsed = parseOverrides(podAnn, { portOf, strict: true });
  if (podParsed.problems.length > 0) return { ok: false, problems: podParsed.problems };
  const nsParsed = parseOverrides(
    Object.fromEntries(Object.entries(nsAnn).filter(([k]) => !(k in podAnn))),
    { portOf, strict: false },
  );
  const warnings = nsParsed.problems.map((p) =>
    `namespace ${ns?.metadata?.name}: ${p.message}${p.partial ? "" : "; ignored"}`
  );
  const ov: Overrides = {
    ...nsParsed.overrides,
    ...Object.fromEntries(Object.entries(podParsed.overrides).filter(([, v]) => v !== undefined)),
    resources: { ...nsParsed.overrides.resources, ...podParsed.overrides.resources },
  };
  const e: Effective = {
    cfg,
    ov,
    opaque: ov.opaquePorts ?? cfg.opaquePorts.map((p) => ({ from: p, to: p })),
    skipInbound: ov.skipInboundPorts ?? cfg.ignoreInboundPorts.map((p) => ({ from: p, to: p })),
    skipOutbound: ov.skipOutboundPorts ?? cfg.ignoreOutboundPorts.map((p) => ({ from: p, to: p })),
    native: ov.nativeSidecar ?? cfg.nativeSidecars,
    uid: ov.proxyUid ?? cfg.proxyUid,
    res: { ...cfg.resources, ...ov.resources },
  };

  const patch: JsonPatchOp[] = [];
  const add = (path: string, value: unknown) => patch.push({ op: "add", path, value });

  // Annotations recording what was injected and with which defaults.
  const annotations: Record<string, string> = {
    [Annotations.proxyVersion]: cfg.version,
    [Annotations.createdBy]: `weft/proxy-injector ${cfg.version}`,
    [Annotations.trustRootSha256]: await anchorsSha256Hex(cfg.trustAnchorsPem),
    [Annotations.identityMode]: "default",
  };
  const podOpaque = inboundPorts(pod).filter((p) => portInRanges(p, e.opaque));
  if (!(Annotations.opaquePorts in podAnn) && podOpaque.length > 0) {
    annotations[Annotations.opaquePorts] = podOpaque.join(",");
  }
  const defaultsUsed: Record<string, string> = {};
  if (ov.defaultInboundPolicy === undefined) {
    defaultsUsed["default-inbound-policy"] = cfg.defaultInboundPolicy;
  }
  if (ov.nativeSidecar === undefined) defaultsUsed["native-sidecar"] = String(cfg.nativeSidecars);
  if (ov.proxyUid === undefined) defaultsUsed["proxy-uid"] = String(cfg.proxyUid);
  if (ov.opaquePorts === undefined) defaultsUsed["opaque-ports"] = formatPortRanges(e.opaque);
  annotations[Annotations.injectedDefaults] = JSON.stringify(defaultsUsed);
  if (!pod.metadata?.annotations) add("/metadata/annotations", {});
  for (const [k, v] of Object.entries(annotations)) add(`/metadata/annotations/${seg(k)}`, v);

  const own = owner(pod);
  const labels: Record<string, string> = {
    [Labels.controlPlaneNs]: cfg.controlPlaneNamespace,
    [Labels.workloadNs]: pod.metadata?.namespace ?? ns?.metadata?.name ?? "",
  };
  if (own) labels[`${Labels.proxyOwnerPrefix}${own.kind}`] = own.name;
  if (!pod.metadata?.labels) add("/metadata/labels", {});
  for (const [k, v] of Object.entries(labels)) add(`/metadata/labels/${seg(k)}`, v);

  const volumes = [
    { name: VOL_XTABLES, emptyDir: {} },
    { name: VOL_END_ENTITY, emptyDir: { medium: "Memory" } },
    {
      name: VOL_TOKEN,
      projected: {
        sources: [{
          serviceAccountToken: {
            audience: "identity.l5d.io",
            expirationSeconds: 86400,
            path: "linkerd-identity-token",
          },
        }],
      },
    },
    {
      name: TRUST_ROOTS_VOLUME,
      // Optional: until the injector's copy exists the proxy runs on the anchors in its environment,
      // and the kubelet fills the volume once it appears.
      configMap: {
        name: trustRootsConfigMapFor(
          pod.metadata?.namespace || ns?.metadata?.name,
          cfg.controlPlaneNamespace,
        ),
        optional: true,
      },
    },
  ];
  if (!pod.spec?.volumes) add("/spec/volumes", []);
  for (const v of volumes) add("/spec/volumes/-", v);

  if (!e.native && (own?.kind === "job" || own?.kind === "cronjob")) {
    // Pain point: a regular proxy container keeps a Job's pod running after the app exits.
    warnings.push(
      `pod of ${own.kind} ${own.name} runs the proxy as a regular container (native sidecars off): the Job ` +
        `completes only if the app ends it with POST http://localhost:${Ports.proxyAdmin}/shutdown, which ` +
        (ov.adminShutdown
          ? "is enabled for this pod"
          : `is off unless the pod or namespace is annotated ${Annotations.proxyAdminShutdown}=enabled`) +
        ` (or enable native sidecars: ${Annotations.enableNativeSidecar}=true)`,
    );
  }
  const init = initContainer(e);
  const proxy = proxyContainer(pod, e);
  if (!pod.spec?.initContainers) add("/spec/initContainers", []);
  // init runs first so the redirects exist before any container (the proxy included) starts.
  add("/spec/initContainers/0", init);
  if (e.native) add("/spec/initContainers/1", proxy);
  else add("/spec/containers/0", proxy);
  return { ok: true, patch, warnings, native: e.native };
}
