/**
 * Inbound policy values for the test control plane's `tables.servers`: Servers (detect, HTTP/1,
 * gRPC, opaque), their authorizations and HTTP routes, shaped as Linkerd's policy controller
 * sends them. Detect timeouts are Linkerd's default 10 s.
 */
import type { Authz, HttpRoute, Server } from "../../proto/gen_messages/inbound.ts";
import { toIpAddress } from "../../proto/ip.ts";

type Metadata = NonNullable<Authz["metadata"]>;

/** Every IPv4 and IPv6 client. */
export const everywhere = [
  { net: { ip: toIpAddress("0.0.0.0"), prefixLen: 0 }, except: [] },
  { net: { ip: toIpAddress("::"), prefixLen: 0 }, except: [] },
];

/** Metadata naming a policy.linkerd.io resource in namespace default. */
export const resource = (kind: string, name: string): Metadata => ({
  kind: {
    $case: "resource",
    value: { group: "policy.linkerd.io", kind, name, namespace: "default", section: "", port: 0 },
  },
});

/** Metadata of a cluster default policy (no resource behind it). */
export const defaultPolicy = (name: string): Metadata => ({ kind: { $case: "default", value: name } });

/** Everyone, meshed or not, from anywhere. */
export const allowAll = (metadata: Metadata = defaultPolicy("all")): Authz => ({
  networks: everywhere,
  authentication: { permit: { $case: "unauthenticated", value: {} } },
  labels: {},
  metadata,
});

/** Only meshed clients holding `identity`. */
export const onlyIdentity = (identity: string, metadata: Metadata): Authz => ({
  networks: everywhere,
  authentication: {
    permit: {
      $case: "meshTLS",
      value: { clients: { $case: "identities", value: { identities: [{ name: identity }], suffixes: [] } } },
    },
  },
  labels: {},
  metadata,
});

/** An HTTPRoute matching every path under `prefix`. */
export const prefixRoute = (name: string, prefix: string, authorizations: Authz[] = []): HttpRoute => ({
  metadata: resource("HTTPRoute", name),
  hosts: [],
  authorizations,
  rules: [{
    matches: [{
      path: { kind: { $case: "prefix", value: prefix } },
      headers: [],
      queryParams: [],
      method: undefined,
    }],
    filters: [],
  }],
});

export const serverLabels = (name: string) => ({ group: "policy.linkerd.io", kind: "server", name });

/** Protocol detection; HTTP gets `routes`. */
export function detectServer(
  name: string,
  routes: HttpRoute[] = [],
  authorizations: Authz[] = [allowAll()],
): Server {
  return {
    protocol: {
      kind: { $case: "detect", value: { timeout: { seconds: 10n, nanos: 0 }, httpRoutes: routes } },
    },
    serverIps: [],
    authorizations,
    labels: serverLabels(name),
  };
}

/** HTTP/1 without detection. */
export function http1Server(
  name: string,
  routes: HttpRoute[],
  authorizations: Authz[] = [allowAll()],
): Server {
  return {
    protocol: { kind: { $case: "http1", value: { routes } } },
    serverIps: [],
    authorizations,
    labels: serverLabels(name),
  };
}

/** gRPC without detection, Linkerd's default routes. */
export function grpcServer(name: string, authorizations: Authz[] = [allowAll()]): Server {
  return {
    protocol: { kind: { $case: "grpc", value: { routes: [] } } },
    serverIps: [],
    authorizations,
    labels: serverLabels(name),
  };
}

/** Opaque TCP: no detection, authorized per connection. */
export function opaqueServer(name: string, authorizations: Authz[] = [allowAll()]): Server {
  return {
    protocol: { kind: { $case: "opaque", value: {} } },
    serverIps: [],
    authorizations,
    labels: serverLabels(name),
  };
}
