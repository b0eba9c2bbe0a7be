/**
 * `weft diagnostics proxy-metrics` and `controller-metrics`: the /metrics text of a proxy's admin
 * server (4191) or of each control-plane component's admin server, fetched through a port-forward
 * into the pod. The proxy's admin server answers its sensitive paths only to local callers
 * (docs/security.md); /metrics is public, and through the forward the call is local anyway.
 */
import type { KubeConfig, V1Pod } from "@kubernetes/client-node";
import { Ports } from "../../proto/ports.ts";
import { withPortForward } from "./port_forward.ts";

export async function fetchMetrics(
  kc: KubeConfig,
  t: { namespace: string; pod: string; port: number },
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<string> {
  return await withPortForward(kc, t, async (local) => {
    const s = AbortSignal.any([AbortSignal.timeout(timeoutMs), ...(signal ? [signal] : [])]);
    const res = await fetch(`http://127.0.0.1:${local}/metrics`, { signal: s }).catch((e) => {
      throw new Error(`GET /metrics of ${t.namespace}/${t.pod}:${t.port} failed: ${(e as Error).message}`);
    });
    const body = await res.text();
    if (res.status !== 200) {
      throw new Error(
        `GET /metrics of ${t.namespace}/${t.pod}:${t.port}: HTTP ${res.status}: ${body.trim()}`,
      );
    }
    return body;
  });
}

/** Whether the pod runs a weft (Linkerd-compatible) proxy: its container, native sidecar or not. */
export function hasProxy(pod: V1Pod): boolean {
  const all = [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? [])];
  return all.some((c) => c.name === "linkerd-proxy");
}

export const PROXY_ADMIN_PORT = Ports.proxyAdmin;

export interface AdminPort {
  container: string;
  port: number;
}

/**
 * A controller's admin servers, by the port names the control plane's manifests give them:
 * `admin-http` (Linkerd's name) or `<component>-admin`; the proxy's `linkerd-admin` is not a
 * controller's.
 */
export function controllerAdminPorts(pod: V1Pod): AdminPort[] {
  const out: AdminPort[] = [];
  for (const c of pod.spec?.containers ?? []) {
    for (const p of c.ports ?? []) {
      const n = p.name ?? "";
      if (n === "admin-http" || (n.endsWith("-admin") && n !== "linkerd-admin")) {
        out.push({ container: c.name, port: p.containerPort });
      }
    }
  }
  return out;
}

/** The header Linkerd's CLI prints before each pod's metrics. */
export function section(title: string): string {
  return `#\n# ${title}\n#\n`;
}
