/**
 * The real `PolicySource`: one control/k8s informer per indexed kind, each event forwarded to
 * the store synchronously. Also the API client the route status writer patches with.
 */
import type { KubeConfig } from "@kubernetes/client-node";
import * as http from "node:http";
import * as https from "node:https";
import type { Registry } from "prom-client";
import {
  Informer,
  KubeApiSource,
  type KubeObject,
  type ResourceRef,
  Resources,
  stripManagedFields,
} from "../k8s/mod.ts";
import { EXTERNAL_WORKLOADS } from "../k8s/external_workload.ts";
import type { Kind, Obj } from "./resources.ts";
import type { PolicySource, ResourceEvent } from "./store.ts";
import type { StatusClient } from "./route_status.ts";

/** The API resource each kind is read from (the versions our CRDs serve). */
export const KIND_RESOURCES: Record<Kind, ResourceRef> = {
  Pod: Resources.pods,
  Namespace: Resources.namespaces,
  Service: Resources.services,
  Server: Resources.servers,
  ServerAuthorization: Resources.serverAuthorizations,
  AuthorizationPolicy: Resources.authorizationPolicies,
  MeshTLSAuthentication: Resources.meshTlsAuthentications,
  NetworkAuthentication: Resources.networkAuthentications,
  HTTPRoute: Resources.policyHttpRoutes,
  GatewayHTTPRoute: Resources.gatewayHttpRoutes,
  GRPCRoute: Resources.gatewayGrpcRoutes,
  EgressNetwork: Resources.egressNetworks,
  TLSRoute: Resources.gatewayTlsRoutes,
  TCPRoute: Resources.gatewayTcpRoutes,
  HTTPLocalRateLimitPolicy: Resources.httpLocalRateLimitPolicies,
  ExternalWorkload: EXTERNAL_WORKLOADS,
};

const METRIC_NAMES: Record<Kind, string> = {
  Pod: "policy_pods",
  Namespace: "policy_namespaces",
  Service: "policy_services",
  Server: "servers",
  ServerAuthorization: "serverauthorizations",
  AuthorizationPolicy: "authorizationpolicies",
  MeshTLSAuthentication: "meshtlsauthentications",
  NetworkAuthentication: "networkauthentications",
  HTTPRoute: "policy_httproutes",
  GatewayHTTPRoute: "gateway_httproutes",
  GRPCRoute: "grpcroutes",
  EgressNetwork: "egressnetworks",
  TLSRoute: "tlsroutes",
  TCPRoute: "tcproutes",
  HTTPLocalRateLimitPolicy: "httplocalratelimitpolicies",
  ExternalWorkload: "policy_externalworkloads",
};

export class InformerPolicySource implements PolicySource {
  readonly #informers: [Kind, Informer<KubeObject>][];

  constructor(kc: KubeConfig, registry: Registry | undefined, log: (m: string) => void) {
    this.#informers = (Object.keys(KIND_RESOURCES) as Kind[]).map((kind) => [
      kind,
      new Informer<KubeObject>({
        name: METRIC_NAMES[kind],
        source: new KubeApiSource<KubeObject>(kc, KIND_RESOURCES[kind]),
        transform: stripManagedFields,
        registry,
        log,
      }),
    ]);
  }

  start(onEvent: (event: ResourceEvent) => void, signal: AbortSignal): void {
    for (const [kind, inf] of this.#informers) {
      const emit = (type: ResourceEvent["type"]) => (o: KubeObject) =>
        onEvent({ type, kind, object: o as Obj });
      inf.onAdd(emit("added"));
      inf.onUpdate((_old, o) => emit("modified")(o));
      inf.onDelete(emit("deleted"));
      inf.start(signal);
    }
  }

  synced(): boolean {
    return this.#informers.every(([, i]) => i.isSynced());
  }

  /** Kinds still waiting for their first list (for readiness). */
  pending(): string[] {
    return this.#informers.filter(([, i]) => !i.isSynced()).map(([k]) => k);
  }
}

/** Sends JSON merge patches to the `status` subresource of routes. */
export class KubeStatusClient implements StatusClient {
  constructor(readonly kc: KubeConfig) {}

  async patchStatus(kind: Kind, namespace: string, name: string, status: unknown): Promise<void> {
    const ref = KIND_RESOURCES[kind];
    const cluster = this.kc.getCurrentCluster();
    if (!cluster) throw new Error("kubeconfig has no current cluster");
    const base = ref.group === "" ? `/api/${ref.version}` : `/apis/${ref.group}/${ref.version}`;
    const url = new URL(
      `${cluster.server.replace(/\/$/, "")}${base}/namespaces/${namespace}/${ref.plural}/${name}/status`,
    );
    const body = JSON.stringify({ status });
    const opts: https.RequestOptions = {
      method: "PATCH",
      headers: { "Content-Type": "application/merge-patch+json", Accept: "application/json" },
    };
    await this.kc.applyToHTTPSOptions(opts);
    const mod = url.protocol === "https:" ? https : http;
    await new Promise<void>((resolve, reject) => {
      const req = mod.request(url, opts, (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (c) => text += c);
        res.on("end", () => {
          if (res.statusCode && res.statusCode < 300) resolve();
          else {reject(
              new Error(
                `patch status of ${kind} ${namespace}/${name}: HTTP ${res.statusCode}: ${text.slice(0, 300)}`,
              ),
            );}
        });
      });
      req.setTimeout(10_000, () => req.destroy(new Error("status patch timed out after 10s")));
      req.on("error", reject);
      req.end(body);
    });
  }
}
