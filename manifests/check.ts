/**
 * `deno task mesh:check`, in the spirit of `linkerd check`: one line per check, `✓` passed, `!` a
 * warning (exit 0, as Linkerd's warnings), `✗` failed (exit 1). Everything goes through the API
 * server (pod ports through its pod proxy), so it works wherever the kubeconfig works.
 *
 *   cluster        API reachable; namespace present and excluded from the webhooks; CRDs Established
 *   control plane  Deployments rolled out; every pod Ready with its proxy; each proxy certified
 *                  (admin /ready, and the certificate expiry it reports)
 *   certificates   trust anchors + issuer (chain, key, expiry), webhook CA + serving certificates
 *                  (chain, names, key, expiry) and the caBundles: nothing expiring within --threshold
 *   webhooks       a server-side dry run of a Pod comes back with a proxy; an invalid ServiceProfile
 *                  and an invalid Server are refused by the validators themselves
 *   data plane     every proxy of an injected pod is ready; pods in injected namespaces without one
 *                  (created while the injector was down) are a warning, and so are pods stuck
 *                  Terminating past their grace period (with the latest Warning event as the reason)
 */
import { checkExpiry } from "../control/certs/expiry_check.ts";
import { TrustAnchors } from "../control/identity/issuer.ts";
import { formatDuration } from "../control/identity/duration.ts";
import { PROXY_CONTAINER } from "../control/injector/decision.ts";
import { Annotations } from "../proto/annotations.ts";
import { Ports } from "../proto/ports.ts";
import { certProblems, type Pair, serviceDnsNames } from "./certs.ts";
import { type Manifest, objectPath } from "./kinds.ts";
import type { Kube } from "./kube.ts";
import {
  CLUSTER_DOMAIN,
  ISSUER_SECRET,
  loadDir,
  NAMESPACE,
  TRUST_ROOTS_CONFIGMAP,
  TRUST_ROOTS_KEY,
  WEBHOOK_CA_SECRET,
  WEBHOOK_CERTS,
} from "./render.ts";
import { CONTROL_PLANE_DIR, CRD_DIR, podTrouble, rolledOut } from "./deploy.ts";
import { formatStuck, stuckTerminating } from "./stuck_terminating.ts";

export type Outcome = "ok" | "warn" | "fail";
export interface CheckResult {
  group: string;
  name: string;
  outcome: Outcome;
  detail: string;
}

export interface CheckOptions {
  kube: Kube;
  thresholdMs: number;
  /** Called with each result as it is known. */
  onResult?: (r: CheckResult) => void;
}

const MARK: Record<Outcome, string> = { ok: "✓", warn: "!", fail: "✗" };
export function formatResult(r: CheckResult): string {
  return `${MARK[r.outcome]} ${r.group.padEnd(13)} ${r.name}: ${r.detail}`;
}

// deno-lint-ignore no-explicit-any
type Obj = any;

function unb64(s: string): string {
  return new TextDecoder().decode(Uint8Array.from(atob(s), (c) => c.charCodeAt(0)));
}

function pair(s: Obj, crt: string, key: string): Pair | undefined {
  return s?.data?.[crt] && s?.data?.[key]
    ? { certPem: unb64(s.data[crt]), keyPem: unb64(s.data[key]) }
    : undefined;
}

function containers(p: Obj): { spec: Obj[]; status: Obj[] } {
  return {
    spec: [...(p.spec?.initContainers ?? []), ...(p.spec?.containers ?? [])],
    status: [...(p.status?.initContainerStatuses ?? []), ...(p.status?.containerStatuses ?? [])],
  };
}

function isReady(p: Obj): boolean {
  return p.status?.conditions?.some((c: Obj) => c.type === "Ready" && c.status === "True") ?? false;
}

/** The proxy's certificate expiry from its /metrics (Unix seconds), if it reports one. */
export function certExpiryFromMetrics(text: string): number | undefined {
  const m = /^identity_cert_expiration_timestamp_seconds(?:\{[^}]*\})?\s+([0-9.e+]+)/m.exec(text);
  const v = m ? Number(m[1]) : NaN;
  return Number.isFinite(v) && v > 0 ? v : undefined;
}

/** The webhook that refused a dry run, from the API server's message. */
export function deniedBy(message: string): string | undefined {
  return /admission webhook "([^"]+)" denied the request/.exec(message)?.[1];
}

export async function runChecks(o: CheckOptions): Promise<CheckResult[]> {
  const { kube } = o;
  const results: CheckResult[] = [];
  const add = (group: string, name: string, outcome: Outcome, detail: string) => {
    const r = { group, name, outcome, detail };
    results.push(r);
    o.onResult?.(r);
  };
  const guard = async (group: string, name: string, f: () => Promise<void>) => {
    try {
      await f();
    } catch (e) {
      add(group, name, "fail", (e as Error).message);
    }
  };
  const now = Date.now();
  const thresholdText = formatDuration(o.thresholdMs);

  // ---- cluster ----
  let reachable = false;
  await guard("cluster", "API server", async () => {
    const v = await kube.version();
    reachable = true;
    add("cluster", "API server", "ok", `${kube.server} answers, Kubernetes ${v.gitVersion}`);
  });
  if (!reachable) return results;
  const ns = await kube.get<Obj>(`/api/v1/namespaces/${NAMESPACE}`);
  if (!ns) {
    add("cluster", "namespace", "fail", `namespace ${NAMESPACE} does not exist: run \`deno task deploy\``);
    return results;
  }
  add(
    "cluster",
    "namespace",
    ns.metadata.labels?.[Annotations.admissionWebhooks] === "disabled" ? "ok" : "fail",
    ns.metadata.labels?.[Annotations.admissionWebhooks] === "disabled"
      ? `${NAMESPACE} exists, excluded from admission webhooks`
      : `${NAMESPACE} lacks the label ${Annotations.admissionWebhooks}=disabled`,
  );
  await guard("cluster", "CRDs", async () => {
    const missing: string[] = [];
    const crds = await loadDir(CRD_DIR);
    for (const c of crds) {
      const live = await kube.get<Obj>(objectPath(c));
      if (!live?.status?.conditions?.some((x: Obj) => x.type === "Established" && x.status === "True")) {
        missing.push(c.metadata.name);
      }
    }
    add(
      "cluster",
      "CRDs",
      missing.length ? "fail" : "ok",
      missing.length
        ? `not installed or not Established: ${missing.join(", ")}`
        : `${crds.length} Established`,
    );
  });

  // ---- control plane ----
  const docs = await loadDir(CONTROL_PLANE_DIR);
  const deployments = docs.filter((d) => d.kind === "Deployment");
  for (const d of deployments) {
    await guard("control plane", d.metadata.name, async () => {
      const live = await kube.get<Obj>(objectPath(d as Manifest));
      if (!live) return add("control plane", d.metadata.name, "fail", "Deployment does not exist");
      const want = live.spec?.replicas ?? 1;
      add(
        "control plane",
        d.metadata.name,
        rolledOut(live) ? "ok" : "fail",
        `${live.status?.availableReplicas ?? 0}/${want} available${
          rolledOut(live) ? "" : ", rollout not complete"
        }`,
      );
    });
  }
  const cpPods = await kube.list<Obj>(`/api/v1/namespaces/${NAMESPACE}/pods`);
  for (const p of cpPods) {
    if (p.status?.phase === "Succeeded" || p.metadata.deletionTimestamp) continue;
    const name = `pod ${p.metadata.name}`;
    const { spec, status } = containers(p);
    if (!spec.some((c: Obj) => c.name === PROXY_CONTAINER)) {
      add("control plane", name, "fail", `has no ${PROXY_CONTAINER} container`);
      continue;
    }
    if (!isReady(p)) {
      add("control plane", name, "fail", podTrouble(p));
      continue;
    }
    await guard("control plane", name, async () => {
      const ready = await kube.podProxy(NAMESPACE, p.metadata.name, Ports.proxyAdmin, "/ready");
      if (ready.status !== 200) {
        return add("control plane", name, "fail", `proxy /ready: HTTP ${ready.status} ${ready.text.trim()}`);
      }
      const metrics = await kube.podProxy(NAMESPACE, p.metadata.name, Ports.proxyAdmin, "/metrics");
      const exp = metrics.status === 200 ? certExpiryFromMetrics(metrics.text) : undefined;
      const restarts = status.reduce((n: number, c: Obj) => n + (c.restartCount ?? 0), 0);
      add(
        "control plane",
        name,
        exp === undefined ? "warn" : "ok",
        `ready, ${spec.length} containers, proxy certified` +
          (exp === undefined
            ? " (it reports no identity_cert_expiration_timestamp_seconds)"
            : `, certificate expires in ${((exp - now / 1000) / 3600).toFixed(1)}h`) +
          (restarts ? `, ${restarts} restarts` : ""),
      );
    });
  }

  // ---- certificates ----
  await guard("certificates", "trust anchors + issuer", async () => {
    const cm = await kube.get<Obj>(`/api/v1/namespaces/${NAMESPACE}/configmaps/${TRUST_ROOTS_CONFIGMAP}`);
    const sec = await kube.get<Obj>(`/api/v1/namespaces/${NAMESPACE}/secrets/${ISSUER_SECRET}`);
    const anchorsPem = cm?.data?.[TRUST_ROOTS_KEY];
    const issuer = pair(sec, "crt.pem", "key.pem") ?? pair(sec, "tls.crt", "tls.key");
    if (!anchorsPem || !issuer) {
      return add(
        "certificates",
        "trust anchors + issuer",
        "fail",
        `${!anchorsPem ? TRUST_ROOTS_CONFIGMAP : ISSUER_SECRET} missing`,
      );
    }
    const report = await checkExpiry({
      anchors: TrustAnchors.parse(anchorsPem),
      issuerPem: issuer.certPem,
      issuerKeyPem: issuer.keyPem,
      thresholdMs: o.thresholdMs,
      now,
    });
    add(
      "certificates",
      "trust anchors + issuer",
      report.code === 0 ? "ok" : "fail",
      report.code === 0
        ? `${
          report.lines.filter((l) => !l.startsWith("issuer chains")).map((l) =>
            l.replace(/ \(serial [^)]*\)/, "")
          ).join("; ")
        }; chain and key ok`
        : report.lines.filter((l) => /^(WARNING|ERROR)/.test(l)).join("; "),
    );
  });
  await guard("certificates", "webhook certificates", async () => {
    const get = (n: string) => kube.get<Obj>(`/api/v1/namespaces/${NAMESPACE}/secrets/${n}`);
    const ca = pair(await get(WEBHOOK_CA_SECRET), "tls.crt", "tls.key");
    if (!ca) return add("certificates", "webhook certificates", "fail", `${WEBHOOK_CA_SECRET} missing`);
    const problems = await certProblems({
      pair: ca,
      what: "webhook CA",
      now,
      renewBeforeMs: o.thresholdMs,
      ca: true,
    });
    for (const w of WEBHOOK_CERTS) {
      const p = pair(await get(w.secret), "tls.crt", "tls.key");
      if (!p) problems.push(`${w.secret} missing`);
      else {
        problems.push(
          ...await certProblems({
            pair: p,
            what: w.secret,
            now,
            renewBeforeMs: o.thresholdMs,
            caPem: ca.certPem,
            dnsNames: serviceDnsNames([...w.services], NAMESPACE, CLUSTER_DOMAIN),
          }),
        );
      }
    }
    for (const d of docs.filter((x) => x.kind.endsWith("WebhookConfiguration"))) {
      const live = await kube.get<Obj>(objectPath(d));
      if (!live) {
        problems.push(`${d.kind} ${d.metadata.name} missing`);
        continue;
      }
      for (const w of live.webhooks ?? []) {
        const bundle = w.clientConfig?.caBundle ? unb64(w.clientConfig.caBundle) : "";
        if (!bundle.includes(ca.certPem.trim())) problems.push(`${w.name}: caBundle is not the webhook CA`);
      }
    }
    add(
      "certificates",
      "webhook certificates",
      problems.length ? "fail" : "ok",
      problems.length
        ? problems.join("; ")
        : `CA and ${WEBHOOK_CERTS.length} serving certificates valid for more than ${thresholdText}, caBundles match`,
    );
  });

  // ---- webhooks ----
  const namespaces = await kube.list<Obj>("/api/v1/namespaces");
  const injected = namespaces.filter((n) =>
    n.metadata.annotations?.[Annotations.inject] === "enabled" && n.metadata.name !== NAMESPACE &&
    n.metadata.labels?.[Annotations.admissionWebhooks] !== "disabled" && !n.metadata.deletionTimestamp
  );
  const probeNs = injected[0]?.metadata.name ?? "default";
  await guard("webhooks", "proxy injector", async () => {
    const r = await kube.dryRunCreate(`/api/v1/namespaces/${probeNs}/pods`, {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { generateName: "weft-check-", annotations: { [Annotations.inject]: "enabled" } },
      spec: { containers: [{ name: "app", image: "localhost/weft:dev", ports: [{ containerPort: 8080 }] }] },
    });
    if (r.status !== 201) {
      return add(
        "webhooks",
        "proxy injector",
        "fail",
        `dry-run Pod in ${probeNs}: HTTP ${r.status} ${r.text.slice(0, 300)}`,
      );
    }
    const pod = JSON.parse(r.text);
    const { spec } = containers(pod);
    const ok = spec.some((c: Obj) => c.name === PROXY_CONTAINER);
    add(
      "webhooks",
      "proxy injector",
      ok ? "ok" : "fail",
      ok
        ? `a dry-run Pod in ${probeNs} came back with ${spec.map((c: Obj) => c.name).join(", ")}`
        : `a dry-run Pod in ${probeNs} came back without ${PROXY_CONTAINER}: the injector was not called (failurePolicy Ignore hides an unreachable injector)`,
    );
  });
  const refused = async (name: string, path: string, body: unknown, webhook: string) => {
    await guard("webhooks", name, async () => {
      const r = await kube.dryRunCreate(path, body);
      if (r.status === 201) {
        return add("webhooks", name, "fail", "an invalid object was admitted: the validator was not called");
      }
      const message = (() => {
        try {
          return JSON.parse(r.text).message as string;
        } catch {
          return r.text;
        }
      })();
      const by = deniedBy(message);
      add(
        "webhooks",
        name,
        by === webhook ? "ok" : "fail",
        by === webhook
          ? `refuses an invalid object: ${message.replace(/^.*denied the request: /, "").slice(0, 140)}`
          : `HTTP ${r.status}: ${message.slice(0, 300)}`,
      );
    });
  };
  await refused(
    "ServiceProfile validator",
    `/apis/linkerd.io/v1alpha2/namespaces/${probeNs}/serviceprofiles`,
    {
      apiVersion: "linkerd.io/v1alpha2",
      kind: "ServiceProfile",
      metadata: { name: `weft-check.${probeNs}.svc.${CLUSTER_DOMAIN}` },
      spec: { routes: [{ name: "bad", condition: { method: "GET", pathRegex: "/(unclosed" } }] },
    },
    "weft-sp-validator.weft.io",
  );
  await refused("policy validator", `/apis/policy.linkerd.io/v1beta3/namespaces/${probeNs}/servers`, {
    apiVersion: "policy.linkerd.io/v1beta3",
    kind: "Server",
    metadata: { name: "weft-check" },
    // Valid for the CRD schema, invalid for the validator: an `In` requirement with no values.
    spec: { port: 8080, podSelector: { matchExpressions: [{ key: "app", operator: "In", values: [] }] } },
  }, "weft-policy-validator.weft.io");

  // ---- data plane ----
  await guard("data plane", "proxies", async () => {
    const meshed = await kube.list<Obj>("/api/v1/pods", {
      labelSelector: `linkerd.io/control-plane-ns=${NAMESPACE}`,
    });
    const running = meshed.filter((p) =>
      p.metadata.namespace !== NAMESPACE && p.status?.phase === "Running" && !p.metadata.deletionTimestamp
    );
    const bad = running.filter((p) => {
      const s = containers(p).status.find((c: Obj) => c.name === PROXY_CONTAINER);
      return !s?.ready;
    });
    add(
      "data plane",
      "proxies",
      bad.length ? "fail" : "ok",
      bad.length
        ? `proxy not ready in ${bad.map((p) => `${p.metadata.namespace}/${p.metadata.name}`).join(", ")}`
        : `${running.length} meshed pods outside ${NAMESPACE}, every proxy ready`,
    );
  });
  await guard("data plane", "terminating pods", async () => {
    // Cluster-wide: a pod that cannot finish terminating anywhere (e.g. a network namespace the runtime cannot
    // remove) holds its workload's rollout, its namespace's deletion, and the node's resources.
    const stuck = stuckTerminating(
      await kube.list<Obj>("/api/v1/pods"),
      await kube.list<Obj>("/api/v1/events", { fieldSelector: "involvedObject.kind=Pod,type=Warning" }),
      Date.now(),
    );
    add(
      "data plane",
      "terminating pods",
      stuck.length ? "warn" : "ok",
      stuck.length
        ? `stuck Terminating past their grace period: ${stuck.map(formatStuck).join("; ")}`
        : "no pod Terminating past its grace period",
    );
  });
  await guard("data plane", "injected namespaces", async () => {
    const missing: string[] = [];
    for (const n of injected) {
      const pods = await kube.list<Obj>(`/api/v1/namespaces/${n.metadata.name}/pods`);
      for (const p of pods) {
        if (p.status?.phase !== "Running" || p.spec?.hostNetwork) continue;
        if (p.metadata.annotations?.[Annotations.inject] === "disabled") continue;
        if (!containers(p).spec.some((c: Obj) => c.name === PROXY_CONTAINER)) {
          missing.push(`${n.metadata.name}/${p.metadata.name}`);
        }
      }
    }
    add(
      "data plane",
      "injected namespaces",
      missing.length ? "warn" : "ok",
      missing.length
        ? `running without a proxy (created while the injector was unreachable? restart them): ${
          missing.join(", ")
        }`
        : `${injected.length} namespaces annotated ${Annotations.inject}=enabled, every running pod meshed`,
    );
  });
  return results;
}
