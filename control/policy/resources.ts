/**
 * The shapes of the Kubernetes objects the policy controller reads: only the fields it uses, so
 * the index works over plain objects from any source (informers, fixtures, the API server).
 */

export interface Meta {
  name: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

export interface Obj<S = unknown, St = unknown> {
  apiVersion?: string;
  kind?: string;
  metadata: Meta;
  spec?: S;
  status?: St;
}

export interface LabelSelectorRequirement {
  key: string;
  operator: "In" | "NotIn" | "Exists" | "DoesNotExist" | string;
  values?: string[];
}

export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: LabelSelectorRequirement[];
}

// --- core ---

export interface ContainerPort {
  name?: string;
  containerPort: number;
  protocol?: string;
}

export interface HttpGetAction {
  path?: string;
  port: number | string;
}

export interface Probe {
  httpGet?: HttpGetAction;
}

export interface Container {
  name: string;
  ports?: ContainerPort[];
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  startupProbe?: Probe;
}

export interface PodSpec {
  containers?: Container[];
  initContainers?: (Container & { restartPolicy?: string })[];
  serviceAccountName?: string;
}

export interface PodStatus {
  podIP?: string;
  podIPs?: { ip: string }[];
}

export type Pod = Obj<PodSpec, PodStatus>;
export type Namespace = Obj<unknown, unknown>;

export interface ServicePort {
  name?: string;
  port: number;
  targetPort?: number | string;
  protocol?: string;
  appProtocol?: string;
}

export interface ServiceSpec {
  type?: string;
  clusterIP?: string;
  clusterIPs?: string[];
  ports?: ServicePort[];
  selector?: Record<string, string>;
}

export type Service = Obj<ServiceSpec, unknown>;

// --- policy.linkerd.io ---

/** The values a Server's `proxyProtocol` takes (the CRD's enum and the validator's check). */
export const SERVER_PROXY_PROTOCOLS: readonly string[] = [
  "unknown",
  "HTTP/1",
  "HTTP/2",
  "gRPC",
  "opaque",
  "TLS",
];

export interface ServerSpec {
  podSelector?: LabelSelector;
  externalWorkloadSelector?: LabelSelector;
  port?: number | string;
  proxyProtocol?: string;
  accessPolicy?: string;
}
export type Server = Obj<ServerSpec, unknown>;

export interface NetworkSpec {
  cidr: string;
  except?: string[];
}

export interface ServiceAccountRef {
  name: string;
  namespace?: string;
}

export interface ServerAuthorizationSpec {
  server?: { name?: string; selector?: LabelSelector };
  client?: {
    networks?: NetworkSpec[];
    unauthenticated?: boolean;
    meshTLS?: {
      unauthenticatedTLS?: boolean;
      identities?: string[];
      serviceAccounts?: ServiceAccountRef[];
    };
  };
}
export type ServerAuthorization = Obj<ServerAuthorizationSpec, unknown>;

/** A reference to another object, as in targetRef, parentRefs and requiredAuthenticationRefs. */
export interface ObjectRef {
  group?: string;
  kind?: string;
  name: string;
  namespace?: string;
  port?: number;
  sectionName?: string;
}

export interface AuthorizationPolicySpec {
  targetRef?: ObjectRef;
  requiredAuthenticationRefs?: ObjectRef[];
}
export type AuthorizationPolicy = Obj<AuthorizationPolicySpec, unknown>;

export interface MeshTLSAuthenticationSpec {
  identities?: string[];
  identityRefs?: ObjectRef[];
}
export type MeshTLSAuthentication = Obj<MeshTLSAuthenticationSpec, unknown>;

export interface NetworkAuthenticationSpec {
  networks?: NetworkSpec[];
}
export type NetworkAuthentication = Obj<NetworkAuthenticationSpec, unknown>;

/** A requests-per-second cap of an HTTPLocalRateLimitPolicy. */
export interface RateLimitLimit {
  requestsPerSecond?: number;
}
export interface RateLimitOverride {
  requestsPerSecond?: number;
  /** ServiceAccounts whose identities share this override's limit. */
  clientRefs?: ObjectRef[];
}
export interface HttpLocalRateLimitPolicySpec {
  targetRef?: ObjectRef;
  total?: RateLimitLimit;
  identity?: RateLimitLimit;
  overrides?: RateLimitOverride[];
}
export interface HttpLocalRateLimitPolicyStatus {
  conditions?: Condition[];
  targetRef?: ObjectRef;
}
export type HttpLocalRateLimitPolicy = Obj<HttpLocalRateLimitPolicySpec, HttpLocalRateLimitPolicyStatus>;

// --- routes (policy.linkerd.io HTTPRoute and Gateway API HTTPRoute/GRPCRoute share a shape) ---

export interface HttpPathMatch {
  type?: "Exact" | "PathPrefix" | "RegularExpression" | string;
  value?: string;
}
export interface HttpHeaderMatch {
  type?: "Exact" | "RegularExpression" | string;
  name: string;
  value: string;
}
export interface HttpRouteMatch {
  path?: HttpPathMatch;
  headers?: HttpHeaderMatch[];
  queryParams?: HttpHeaderMatch[];
  method?: string;
}
export interface HttpHeader {
  name: string;
  value: string;
}
export interface HeaderModifier {
  set?: HttpHeader[];
  add?: HttpHeader[];
  remove?: string[];
}
export interface RouteFilter {
  type: string;
  requestHeaderModifier?: HeaderModifier;
  responseHeaderModifier?: HeaderModifier;
  requestRedirect?: {
    scheme?: string;
    hostname?: string;
    path?: { type: string; replaceFullPath?: string; replacePrefixMatch?: string };
    port?: number;
    statusCode?: number;
  };
}
export interface BackendRef {
  group?: string;
  kind?: string;
  name: string;
  namespace?: string;
  port?: number;
  weight?: number;
  filters?: RouteFilter[];
}
export interface HttpRouteRule {
  name?: string;
  matches?: HttpRouteMatch[];
  filters?: RouteFilter[];
  backendRefs?: BackendRef[];
  timeouts?: { request?: string; backendRequest?: string };
}
export interface HttpRouteSpec {
  parentRefs?: ObjectRef[];
  hostnames?: string[];
  rules?: HttpRouteRule[];
}

export interface GrpcMethodMatch {
  type?: "Exact" | "RegularExpression" | string;
  service?: string;
  method?: string;
}
export interface GrpcRouteMatch {
  method?: GrpcMethodMatch;
  headers?: HttpHeaderMatch[];
}
export interface GrpcRouteRule {
  name?: string;
  matches?: GrpcRouteMatch[];
  filters?: RouteFilter[];
  backendRefs?: BackendRef[];
}
export interface GrpcRouteSpec {
  parentRefs?: ObjectRef[];
  hostnames?: string[];
  rules?: GrpcRouteRule[];
}

export interface RouteParentStatus {
  parentRef: ObjectRef;
  controllerName: string;
  conditions: Condition[];
}
export interface Condition {
  type: string;
  status: "True" | "False" | "Unknown";
  reason: string;
  message: string;
  lastTransitionTime: string;
  observedGeneration?: number;
}
export interface RouteStatus {
  parents?: RouteParentStatus[];
}

export type HttpRoute = Obj<HttpRouteSpec, RouteStatus>;
export type GrpcRoute = Obj<GrpcRouteSpec, RouteStatus>;

// --- egress (EgressNetwork, and Gateway API TLSRoute/TCPRoute, which Linkerd serves for it) ---

export interface EgressNetworkSpec {
  /** Unset: every address outside the cluster networks. */
  networks?: NetworkSpec[];
  trafficPolicy?: "Allow" | "Deny" | string;
}
export type EgressNetwork = Obj<EgressNetworkSpec, { conditions?: Condition[] }>;

export interface L4RouteRule {
  name?: string;
  backendRefs?: BackendRef[];
}
export interface TlsRouteSpec {
  parentRefs?: ObjectRef[];
  hostnames?: string[];
  rules?: L4RouteRule[];
}
export interface TcpRouteSpec {
  parentRefs?: ObjectRef[];
  rules?: L4RouteRule[];
}
export type TlsRoute = Obj<TlsRouteSpec, RouteStatus>;
export type TcpRoute = Obj<TcpRouteSpec, RouteStatus>;

export const POLICY_GROUP = "policy.linkerd.io";
export const GATEWAY_GROUP = "gateway.networking.k8s.io";

/** Every kind the controller indexes, each with the API group it is read from. */
export const KINDS = {
  Pod: { group: "", plural: "pods" },
  Namespace: { group: "", plural: "namespaces" },
  Service: { group: "", plural: "services" },
  Server: { group: POLICY_GROUP, plural: "servers" },
  ServerAuthorization: { group: POLICY_GROUP, plural: "serverauthorizations" },
  AuthorizationPolicy: { group: POLICY_GROUP, plural: "authorizationpolicies" },
  MeshTLSAuthentication: { group: POLICY_GROUP, plural: "meshtlsauthentications" },
  NetworkAuthentication: { group: POLICY_GROUP, plural: "networkauthentications" },
  /** policy.linkerd.io HTTPRoute. */
  HTTPRoute: { group: POLICY_GROUP, plural: "httproutes" },
  /** gateway.networking.k8s.io HTTPRoute. */
  GatewayHTTPRoute: { group: GATEWAY_GROUP, plural: "httproutes" },
  GRPCRoute: { group: GATEWAY_GROUP, plural: "grpcroutes" },
  EgressNetwork: { group: POLICY_GROUP, plural: "egressnetworks" },
  TLSRoute: { group: GATEWAY_GROUP, plural: "tlsroutes" },
  TCPRoute: { group: GATEWAY_GROUP, plural: "tcproutes" },
  HTTPLocalRateLimitPolicy: { group: POLICY_GROUP, plural: "httplocalratelimitpolicies" },
  /** workload.linkerd.io ExternalWorkload, for the inbound policy of workloads outside the cluster. */
  ExternalWorkload: { group: "workload.linkerd.io", plural: "externalworkloads" },
} as const;

export type Kind = keyof typeof KINDS;

/** The Kubernetes kind name of an indexed kind (both HTTPRoute groups are `HTTPRoute`). */
export function kubeKind(kind: Kind): string {
  return kind === "GatewayHTTPRoute" ? "HTTPRoute" : kind;
}
