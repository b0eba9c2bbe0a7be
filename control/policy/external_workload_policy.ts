/**
 * Inbound policy of an ExternalWorkload port (mesh expansion, issue 24). A proxy running outside
 * the cluster names itself in `PortSpec.workload` as `{"ns":"..","external_workload":".."}`; the
 * answer is built as for a pod, with Servers selecting through `externalWorkloadSelector` instead
 * of `podSelector`, a Server `port` name resolved against the workload's declared ports, and the
 * default policy and opaque ports from the workload's own annotations, then its namespace's, then
 * the cluster's. A workload has no kubelet, so no probe routes are added.
 */
import { RequestError } from "../grpc/request_error.ts";
import { type ExternalWorkload, externalWorkloadNamedPort } from "../k8s/external_workload.ts";
import type { PolicyConfig } from "./config.ts";
import { defaultServer, serverPolicy } from "./inbound_index.ts";
import type { Pod, Server } from "./resources.ts";
import { routeOrder } from "./route_convert.ts";
import { selects, specificity } from "./selector.ts";
import type { PolicyStore } from "./store.ts";

export const EXTERNAL_WORKLOAD = "ExternalWorkload" as const;

/** The inbound Server message (named through the builders: generated code stays behind inbound_index.ts). */
type ProtoServer = ReturnType<typeof defaultServer>;

export function externalWorkload(store: PolicyStore, ns: string, name: string): ExternalWorkload | undefined {
  return store.get<ExternalWorkload & { metadata: { name: string } }>(EXTERNAL_WORKLOAD, ns, name);
}

/** Whether the Server's `port` (a number, or a name of the workload's ports) is `port`. */
export function serverSelectsWorkloadPort(server: Server, ew: ExternalWorkload, port: number): boolean {
  const p = server.spec?.port;
  if (typeof p === "number") return p === port;
  if (typeof p !== "string") return false;
  if (/^[0-9]+$/.test(p)) return Number(p) === port;
  return externalWorkloadNamedPort(ew, p) === port;
}

/**
 * Servers in the workload's namespace selecting (workload, port) through externalWorkloadSelector,
 * most specific first, in the order used for pods.
 */
export function matchingExternalWorkloadServers(
  store: PolicyStore,
  ew: ExternalWorkload,
  port: number,
): Server[] {
  const out: Server[] = [];
  for (const s of store.servers(ew.metadata.namespace ?? "")) {
    const sel = s.spec?.externalWorkloadSelector;
    if (!sel) continue;
    if (selects(sel, ew.metadata.labels) && serverSelectsWorkloadPort(s, ew, port)) out.push(s);
  }
  return out.sort((a, b) => {
    const sa = specificity(a.spec?.externalWorkloadSelector),
      sb = specificity(b.spec?.externalWorkloadSelector);
    if (sa !== sb) return sb - sa;
    const na = typeof a.spec?.port === "number" ? 0 : 1, nb = typeof b.spec?.port === "number" ? 0 : 1;
    if (na !== nb) return na - nb;
    return routeOrder(a, b);
  });
}

/**
 * The workload seen as a pod by the shared policy builders: its metadata (labels, annotations)
 * and its declared ports as one container's, so port names resolve; no probes.
 */
export function workloadAsPod(ew: ExternalWorkload): Pod {
  return {
    metadata: { ...ew.metadata, name: ew.metadata.name ?? "" },
    spec: {
      containers: [{
        name: "external-workload",
        ports: (ew.spec?.ports ?? []).map((p) => ({
          name: p.name,
          containerPort: p.port,
          protocol: p.protocol,
        })),
      }],
    },
  };
}

/** The policy for (namespace, external workload, port); not_found when the workload is not known. */
export function externalWorkloadInboundPolicy(
  store: PolicyStore,
  cfg: PolicyConfig,
  ns: string,
  name: string,
  port: number,
): ProtoServer {
  const ew = externalWorkload(store, ns, name);
  if (!ew) throw new RequestError("not_found", `ExternalWorkload ${ns}/${name} not found`);
  const asPod = workloadAsPod(ew);
  const server = matchingExternalWorkloadServers(store, ew, port)[0];
  return server ? serverPolicy(store, server, asPod, port, cfg) : defaultServer(store, asPod, port, cfg);
}
