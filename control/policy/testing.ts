/** Object builders shared by the policy tests and the benchmark (plain objects, as informers deliver). */
import type {
  AuthorizationPolicySpec,
  Container,
  GrpcRouteSpec,
  HttpRouteSpec,
  Kind,
  MeshTLSAuthenticationSpec,
  NetworkAuthenticationSpec,
  Obj,
  Pod,
  ServerAuthorizationSpec,
  ServerSpec,
  ServiceSpec,
} from "./resources.ts";
import { PolicyStore } from "./store.ts";

let rv = 1;

export function meta(
  ns: string | undefined,
  name: string,
  extra: { labels?: Record<string, string>; annotations?: Record<string, string>; created?: string } = {},
) {
  return {
    name,
    namespace: ns,
    resourceVersion: String(rv++),
    labels: extra.labels,
    annotations: extra.annotations,
    creationTimestamp: extra.created,
  };
}

export function pod(
  ns: string,
  name: string,
  labels: Record<string, string>,
  opts: { containers?: Container[]; annotations?: Record<string, string>; ip?: string } = {},
): Pod {
  return {
    metadata: meta(ns, name, { labels, annotations: opts.annotations }),
    spec: {
      containers: opts.containers ?? [{ name: "app", ports: [{ name: "http", containerPort: 8080 }] }],
    },
    status: opts.ip ? { podIP: opts.ip } : {},
  };
}

export function namespace(name: string, annotations?: Record<string, string>): Obj {
  return { metadata: meta(undefined, name, { annotations }) };
}

export function server(
  ns: string,
  name: string,
  spec: ServerSpec,
  extra: { labels?: Record<string, string>; created?: string } = {},
): Obj<ServerSpec> {
  return { apiVersion: "policy.linkerd.io/v1beta3", kind: "Server", metadata: meta(ns, name, extra), spec };
}

export function service(
  ns: string,
  name: string,
  spec: ServiceSpec,
  annotations?: Record<string, string>,
): Obj<ServiceSpec> {
  return { metadata: meta(ns, name, { annotations }), spec };
}

export function authorizationPolicy(
  ns: string,
  name: string,
  spec: AuthorizationPolicySpec,
): Obj<AuthorizationPolicySpec> {
  return { metadata: meta(ns, name), spec };
}

export function meshTls(
  ns: string,
  name: string,
  spec: MeshTLSAuthenticationSpec,
): Obj<MeshTLSAuthenticationSpec> {
  return { metadata: meta(ns, name), spec };
}

export function networkAuthn(
  ns: string,
  name: string,
  spec: NetworkAuthenticationSpec,
): Obj<NetworkAuthenticationSpec> {
  return { metadata: meta(ns, name), spec };
}

export function serverAuthorization(
  ns: string,
  name: string,
  spec: ServerAuthorizationSpec,
): Obj<ServerAuthorizationSpec> {
  return { metadata: meta(ns, name), spec };
}

export function httpRoute(
  ns: string,
  name: string,
  spec: HttpRouteSpec,
  extra: { annotations?: Record<string, string>; created?: string } = {},
): Obj<HttpRouteSpec> {
  return { metadata: { ...meta(ns, name, extra), generation: 1 }, spec };
}

export function grpcRoute(ns: string, name: string, spec: GrpcRouteSpec): Obj<GrpcRouteSpec> {
  return { metadata: { ...meta(ns, name), generation: 1 }, spec };
}

/** A store holding `objects`, each given with its kind. */
export function storeWith(...objects: [Kind, Obj][]): PolicyStore {
  const s = new PolicyStore();
  for (const [kind, object] of objects) s.apply({ type: "added", kind, object });
  return s;
}
