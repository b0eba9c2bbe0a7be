/**
 * The mesh's certificate rotation state (issue 21): what the trust-roots ConfigMap and the issuer
 * Secret say, and per meshed pod what its proxy trusts and which issuer signed its leaf, read from
 * the proxy's admin `/metrics` through the API server's pod proxy (as the other checks reach
 * proxies). `readRotationState` is what `mesh:check` prints and what the rotation command waits on;
 * parsing and evaluation are pure and exported for tests.
 *
 *   proxy     weft_identity_trust_anchor_expiration_timestamp_seconds{fingerprint_sha256,subject}
 *             weft_identity_leaf_issuer_info{fingerprint_sha256,subject} 1
 *             identity_cert_expiration_timestamp_seconds
 *   identity  weft_identity_trust_anchor_expiration_timestamp_seconds{fingerprint_sha256,subject}
 *             weft_identity_issuer_info{fingerprint_sha256,subject} 1
 *
 * A pod is `behind` when the anchors its proxy trusts are not exactly those of `ca-bundle.crt`, or
 * its leaf was not signed by the current issuer (the first of `weft-issuers.crt`, which identity
 * writes); `unknown` when its metrics could not be read or lack those series.
 */
import { certInfos } from "../../control/identity/cert_info.ts";
import { PROXY_CONTAINER } from "../../control/injector/decision.ts";
import { parseRenewBefore } from "../../control/identity/trust_roots.ts";
import { ISSUERS_KEY, RENEW_BEFORE_KEY } from "../../control/identity/trust_roots.ts";
import { Ports } from "../../proto/ports.ts";
import type { Kube } from "../kube.ts";
import { ISSUER_SECRET, NAMESPACE, TRUST_ROOTS_CONFIGMAP, TRUST_ROOTS_KEY } from "../render.ts";
import { type Obj, podContainers, unb64 } from "./objects.ts";

export const ANCHOR_METRIC = "weft_identity_trust_anchor_expiration_timestamp_seconds";
export const LEAF_ISSUER_METRIC = "weft_identity_leaf_issuer_info";
export const IDENTITY_ISSUER_METRIC = "weft_identity_issuer_info";
export const CERT_EXPIRY_METRIC = "identity_cert_expiration_timestamp_seconds";

/** A certificate as the contract names it. */
export interface NamedCert {
  fingerprint: string;
  subject: string;
  notAfter?: Date;
}

/** What one component's metrics say about rotation; fields are absent when not reported. */
export interface ComponentMetrics {
  anchors?: NamedCert[];
  /** Proxy: the issuer of its leaf. Identity: the issuer it signs with. */
  issuer?: NamedCert;
  /** Proxy: its leaf's expiry. Identity: its issuer's expiry. */
  certExpiry?: Date;
  /** Metrics present but unusable (e.g. two issuers reported). */
  problems: string[];
}

export type PodStatus = "current" | "behind" | "unknown";

export interface PodRotationState {
  namespace: string;
  name: string;
  /** "proxy" for a meshed pod's proxy, "identity" for the identity controller itself. */
  kind: "proxy" | "identity";
  status: PodStatus;
  anchors?: NamedCert[];
  issuer?: NamedCert;
  certExpiry?: Date;
  /** Why it is behind or unknown; empty when current. */
  reasons: string[];
}

export interface RotationState {
  now: number;
  /** `ca-bundle.crt`, in order. */
  anchors: NamedCert[];
  /** `weft-issuers.crt` as identity published it, current issuer first. */
  publishedIssuers: NamedCert[];
  /** The issuer certificate in the issuer Secret. */
  secretIssuer?: NamedCert;
  renewBefore?: Date;
  /** What is wrong with the ConfigMap or Secret themselves. */
  problems: string[];
  /** One per identity pod and per meshed pod (control plane included). */
  pods: PodRotationState[];
}

/** One sample line of Prometheus text: name, labels, value. Undefined for comments and junk. */
export function parseSample(
  line: string,
): { name: string; labels: Record<string, string>; value: number } | undefined {
  const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)/.exec(line.trim());
  if (!m) return undefined;
  const labels: Record<string, string> = {};
  const body = m[3] ?? "";
  const re = /\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?/y;
  let at = 0;
  while (at < body.length) {
    re.lastIndex = at;
    const l = re.exec(body);
    if (!l) return undefined;
    labels[l[1]] = l[2].replace(/\\(.)/g, (_, c) => c === "n" ? "\n" : c);
    at = re.lastIndex;
  }
  const value = Number(m[4]);
  return Number.isNaN(value) ? undefined : { name: m[1], labels, value };
}

/** The rotation series of a proxy's (or, with `issuerMetric`, identity's) metrics text. */
export function parseRotationMetrics(text: string, issuerMetric = LEAF_ISSUER_METRIC): ComponentMetrics {
  const anchors: NamedCert[] = [];
  const issuers: NamedCert[] = [];
  let certExpiry: Date | undefined;
  for (const line of text.split("\n")) {
    if (line.startsWith("#")) continue;
    const s = parseSample(line);
    if (!s) continue;
    const fp = s.labels.fingerprint_sha256;
    if (s.name === ANCHOR_METRIC && fp) {
      anchors.push({ fingerprint: fp, subject: s.labels.subject ?? "", notAfter: new Date(s.value * 1000) });
    } else if (s.name === issuerMetric && fp && s.value !== 0) {
      issuers.push({ fingerprint: fp, subject: s.labels.subject ?? "" });
    } else if (s.name === CERT_EXPIRY_METRIC && s.value > 0) {
      certExpiry = new Date(s.value * 1000);
    }
  }
  const problems = issuers.length > 1
    ? [
      `reports ${issuers.length} issuers in ${issuerMetric}: ${
        issuers.map((i) => i.fingerprint.slice(0, 12)).join(", ")
      }`,
    ]
    : [];
  return {
    ...(anchors.length ? { anchors } : {}),
    ...(issuers.length === 1 ? { issuer: issuers[0] } : {}),
    ...(certExpiry ? { certExpiry } : {}),
    problems,
  };
}

function fpList(certs: NamedCert[]): string {
  return certs.map((c) => c.fingerprint.slice(0, 12)).join(", ") || "none";
}

/**
 * A component against what it should have: exactly the anchors of `ca-bundle.crt`, and (proxy) a
 * leaf from the current issuer or (identity) the current issuer.
 */
export function evaluateComponent(
  pod: { namespace: string; name: string; kind: "proxy" | "identity" },
  metrics: ComponentMetrics | { error: string },
  want: { anchors: NamedCert[]; issuer?: NamedCert },
): PodRotationState {
  const base = { namespace: pod.namespace, name: pod.name, kind: pod.kind };
  if ("error" in metrics) return { ...base, status: "unknown", reasons: [metrics.error] };
  const reasons: string[] = [...metrics.problems];
  let unknown = metrics.problems.length > 0;
  const issuerMetric = pod.kind === "proxy" ? LEAF_ISSUER_METRIC : IDENTITY_ISSUER_METRIC;
  if (!metrics.anchors) {
    unknown = true;
    reasons.push(`its metrics have no ${ANCHOR_METRIC} (a ${pod.kind} without issue 21's metrics?)`);
  }
  if (!metrics.issuer && metrics.problems.length === 0) {
    unknown = true;
    reasons.push(`its metrics have no ${issuerMetric}`);
  }
  let behind = false;
  if (metrics.anchors) {
    const have = new Set(metrics.anchors.map((a) => a.fingerprint));
    const wantSet = new Set(want.anchors.map((a) => a.fingerprint));
    const missing = want.anchors.filter((a) => !have.has(a.fingerprint));
    const extra = metrics.anchors.filter((a) => !wantSet.has(a.fingerprint));
    if (missing.length) reasons.push(`does not trust anchor ${fpList(missing)} of ${TRUST_ROOTS_KEY} yet`);
    if (extra.length) reasons.push(`still trusts anchor ${fpList(extra)}, no longer in ${TRUST_ROOTS_KEY}`);
    behind ||= missing.length > 0 || extra.length > 0;
  }
  if (metrics.issuer && want.issuer && metrics.issuer.fingerprint !== want.issuer.fingerprint) {
    behind = true;
    reasons.push(
      pod.kind === "proxy"
        ? `leaf from issuer ${metrics.issuer.fingerprint.slice(0, 12)}, not the current ${
          want.issuer.fingerprint.slice(0, 12)
        }`
        : `signs with issuer ${metrics.issuer.fingerprint.slice(0, 12)}, not the Secret's ${
          want.issuer.fingerprint.slice(0, 12)
        }`,
    );
  }
  return {
    ...base,
    status: behind ? "behind" : unknown ? "unknown" : "current",
    ...(metrics.anchors ? { anchors: metrics.anchors } : {}),
    ...(metrics.issuer ? { issuer: metrics.issuer } : {}),
    ...(metrics.certExpiry ? { certExpiry: metrics.certExpiry } : {}),
    reasons,
  };
}

async function named(pem: string, what: string): Promise<NamedCert[]> {
  return (await certInfos(pem, what)).map((c) => ({
    fingerprint: c.fingerprint,
    subject: c.subject,
    notAfter: c.notAfter,
  }));
}

/** Runs `fn` over `items`, at most `limit` at a time, results in order. */
async function mapLimited<T, R>(items: T[], limit: number, fn: (t: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

async function metricsOf(kube: Kube, p: Obj, port: number): Promise<string | { error: string }> {
  try {
    const r = await kube.podProxy(p.metadata.namespace, p.metadata.name, port, "/metrics");
    if (r.status !== 200) {
      return { error: `admin /metrics on ${port}: HTTP ${r.status} ${r.text.trim().slice(0, 120)}` };
    }
    return r.text;
  } catch (e) {
    return { error: `admin /metrics on ${port}: ${(e as Error).message}` };
  }
}

function isLive(p: Obj): boolean {
  return p.status?.phase === "Running" && !p.metadata.deletionTimestamp;
}

export interface ReadOptions {
  now?: number;
  /** Pod proxy requests at once (each is one API server round trip). */
  concurrency?: number;
}

/** The state of the whole mesh, read through the API server. */
export async function readRotationState(kube: Kube, o: ReadOptions = {}): Promise<RotationState> {
  const now = o.now ?? Date.now();
  const problems: string[] = [];
  const cm = await kube.get<Obj>(`/api/v1/namespaces/${NAMESPACE}/configmaps/${TRUST_ROOTS_CONFIGMAP}`);
  const sec = await kube.get<Obj>(`/api/v1/namespaces/${NAMESPACE}/secrets/${ISSUER_SECRET}`);
  let anchors: NamedCert[] = [];
  let publishedIssuers: NamedCert[] = [];
  let secretIssuer: NamedCert | undefined;
  if (!cm) problems.push(`configmap ${NAMESPACE}/${TRUST_ROOTS_CONFIGMAP} does not exist`);
  else {
    try {
      anchors = await named(cm.data?.[TRUST_ROOTS_KEY] ?? "", TRUST_ROOTS_KEY);
    } catch (e) {
      problems.push((e as Error).message);
    }
    if (!cm.data?.[ISSUERS_KEY]) {
      problems.push(`identity has not published ${ISSUERS_KEY} (an older identity?)`);
    } else {
      try {
        publishedIssuers = await named(cm.data[ISSUERS_KEY], ISSUERS_KEY);
      } catch (e) {
        problems.push((e as Error).message);
      }
    }
  }
  const secretPem = sec?.data?.["tls.crt"] ?? sec?.data?.["crt.pem"];
  if (!secretPem) {
    problems.push(`secret ${NAMESPACE}/${ISSUER_SECRET} is missing or has no tls.crt / crt.pem`);
  } else {
    try {
      secretIssuer = (await named(unb64(secretPem), `secret ${ISSUER_SECRET}`))[0];
    } catch (e) {
      problems.push((e as Error).message);
    }
  }
  const current = publishedIssuers[0];
  if (current && secretIssuer && current.fingerprint !== secretIssuer.fingerprint) {
    problems.push(
      `identity signs with issuer ${current.fingerprint.slice(0, 12)}, not the Secret's ${
        secretIssuer.fingerprint.slice(0, 12)
      } (not picked up yet, or refused: see the identity log)`,
    );
  }

  const meshed =
    (await kube.list<Obj>("/api/v1/pods", { labelSelector: `linkerd.io/control-plane-ns=${NAMESPACE}` }))
      .filter(isLive)
      .filter((p) => podContainers(p).spec.some((c: Obj) => c.name === PROXY_CONTAINER));
  const identityPods = meshed.filter((p) =>
    p.metadata.namespace === NAMESPACE &&
    p.metadata.labels?.["linkerd.io/control-plane-component"] === "identity"
  );
  const targets: { p: Obj; kind: "proxy" | "identity"; port: number }[] = [
    ...identityPods.map((p) => ({ p, kind: "identity" as const, port: Ports.identityAdmin })),
    ...meshed.map((p) => ({ p, kind: "proxy" as const, port: Ports.proxyAdmin })),
  ];
  const pods = await mapLimited(targets, o.concurrency ?? 8, async ({ p, kind, port }) => {
    const text = await metricsOf(kube, p, port);
    const metrics = typeof text === "string"
      ? parseRotationMetrics(text, kind === "proxy" ? LEAF_ISSUER_METRIC : IDENTITY_ISSUER_METRIC)
      : text;
    return evaluateComponent(
      { namespace: p.metadata.namespace, name: p.metadata.name, kind },
      metrics,
      { anchors, issuer: kind === "proxy" ? current : secretIssuer },
    );
  });
  const renewBefore = parseRenewBefore(cm?.data?.[RENEW_BEFORE_KEY]);
  return {
    now,
    anchors,
    publishedIssuers,
    ...(secretIssuer ? { secretIssuer } : {}),
    ...(renewBefore ? { renewBefore } : {}),
    problems,
    pods,
  };
}

/** The pods that are not current (behind or unknown), e.g. for a command that waits on them. */
export function podsNotCurrent(state: RotationState): PodRotationState[] {
  return state.pods.filter((p) => p.status !== "current");
}
