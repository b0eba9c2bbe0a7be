/**
 * Admission checks of policy.linkerd.io resources and Gateway API routes: every problem is a
 * message that starts with the field it is about (`spec.networks[0].cidr: ...`). The index
 * ignores resources it cannot use; this rejects them before they are stored.
 */
import { DEFAULT_INBOUND_POLICIES } from "../../proto/env.ts";
import { parseDurationMs } from "../../proto/go_duration.ts";
import { networkContains, parseNetwork } from "../policy/network_cidr.ts";
import { convertFilter, grpcMatch, httpMatch } from "../policy/route_convert.ts";
import {
  type AuthorizationPolicySpec,
  type GrpcRouteSpec,
  type HttpLocalRateLimitPolicySpec,
  type HttpRouteSpec,
  type MeshTLSAuthenticationSpec,
  type NetworkAuthenticationSpec,
  type NetworkSpec,
  type Obj,
  SERVER_PROXY_PROTOCOLS,
  type ServerAuthorizationSpec,
  type ServerSpec,
} from "../policy/resources.ts";
import { asciiEqualFold, isNamespaceRef, isServiceAccountRef, refGroupIs } from "../policy/ref_kind.ts";
import { selectorProblems, selectorsOverlap } from "../policy/selector.ts";
import type { AdmissionDecision, AdmissionHandler, AdmissionRequest } from "./admission.ts";
import {
  egressNetworkProblems,
  egressParentPortProblems,
  tcpRouteProblems,
  tlsRouteProblems,
} from "./egress_validator.ts";
import type { EgressNetworkSpec, TcpRouteSpec, TlsRouteSpec } from "../policy/resources.ts";
import { rateLimitPolicyProblems } from "./ratelimit_validator.ts";

/** The Servers already in a namespace, for the duplicate-port check. */
export interface ServerLister {
  servers(namespace: string): Promise<Obj<ServerSpec>[]> | Obj<ServerSpec>[];
}

/** A Server's accessPolicy takes the same values as the default-inbound-policy setting. */
const ACCESS_POLICIES: readonly string[] = DEFAULT_INBOUND_POLICIES;
const PORT_NAME = /^(?=.*[a-z])[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

function cidrProblem(cidr: unknown, field: string): string | undefined {
  if (typeof cidr !== "string") return `${field}: must be a CIDR string`;
  try {
    parseNetwork(cidr);
    return undefined;
  } catch (e) {
    return `${field}: ${(e as Error).message}`;
  }
}

// Linkerd refuses an exception that lies outside its network or removes all of it.
function exceptProblem(cidr: string, except: string, field: string): string | undefined {
  const net = parseNetwork(cidr), ex = parseNetwork(except);
  if (networkContains(ex, net)) return `${field}: "${except}" covers all of cidr "${cidr}"`;
  if (!networkContains(net, ex)) return `${field}: "${except}" is not inside cidr "${cidr}"`;
  return undefined;
}

function networkProblems(list: NetworkSpec[] | undefined, field: string): string[] {
  const out: string[] = [];
  (list ?? []).forEach((n, i) => {
    const p = cidrProblem(n?.cidr, `${field}[${i}].cidr`);
    if (p) out.push(p);
    (n?.except ?? []).forEach((e, j) => {
      const f = `${field}[${i}].except[${j}]`;
      const q = cidrProblem(e, f) ?? (p ? undefined : exceptProblem(n.cidr, e, f));
      if (q) out.push(q);
    });
  });
  return out;
}

const SPIFFE_TRUST_DOMAIN = /^[a-z0-9._-]+$/;
const SPIFFE_SEGMENT = /^[A-Za-z0-9._-]+$/;

/** A SPIFFE ID as the SPIFFE-ID standard (and Linkerd's admission) allows it. */
function spiffeProblem(id: string, field: string): string | undefined {
  const rest = id.slice("spiffe://".length);
  const slash = rest.indexOf("/");
  const domain = slash < 0 ? rest : rest.slice(0, slash);
  const bad = (why: string) => `${field}: "${id}" is not a SPIFFE ID: ${why}`;
  if (domain === "") return bad("the trust domain is empty");
  if (!SPIFFE_TRUST_DOMAIN.test(domain)) {
    return bad("the trust domain takes lowercase letters, digits, '.', '-' and '_' only");
  }
  if (slash < 0) return undefined;
  for (const seg of rest.slice(slash + 1).split("/")) {
    if (seg === "") return bad("the path has an empty segment or a trailing '/'");
    if (seg === "." || seg === "..") return bad("the path has a '.' or '..' segment");
    if (!SPIFFE_SEGMENT.test(seg)) return bad("path segments take letters, digits, '.', '-' and '_' only");
  }
  return undefined;
}

function identityProblem(id: string, field: string): string | undefined {
  if (id === "*") return undefined;
  if (id.startsWith("spiffe://")) return spiffeProblem(id, field);
  const name = id.startsWith("*.") ? id.slice(2) : id;
  return DNS_NAME.test(name)
    ? undefined
    : `${field}: "${id}" is not an identity name, "*", "*.<suffix>" or a spiffe:// ID`;
}

export function serverProblems(s: Obj<ServerSpec>): string[] {
  const out: string[] = [];
  const spec = s.spec ?? {};
  const port = spec.port;
  if (port === undefined) out.push("spec.port: required");
  else if (typeof port === "number") {
    if (!Number.isInteger(port) || port < 1 || port > 65535) {
      out.push(`spec.port: ${port} is not in 1..65535`);
    }
  } else if (typeof port !== "string" || port.length > 15 || !PORT_NAME.test(port)) {
    out.push(`spec.port: "${port}" is not a port number or an IANA port name`);
  }
  if (!spec.podSelector === !spec.externalWorkloadSelector) {
    out.push("spec.podSelector: exactly one of podSelector and externalWorkloadSelector must be set");
  }
  out.push(...selectorProblems(spec.podSelector, "spec.podSelector"));
  out.push(...selectorProblems(spec.externalWorkloadSelector, "spec.externalWorkloadSelector"));
  if (spec.proxyProtocol !== undefined && !SERVER_PROXY_PROTOCOLS.includes(spec.proxyProtocol)) {
    out.push(
      `spec.proxyProtocol: "${spec.proxyProtocol}" is not one of ${SERVER_PROXY_PROTOCOLS.join(", ")}`,
    );
  }
  if (spec.accessPolicy !== undefined && !ACCESS_POLICIES.includes(spec.accessPolicy)) {
    out.push(`spec.accessPolicy: "${spec.accessPolicy}" is not one of ${ACCESS_POLICIES.join(", ")}`);
  }
  return out;
}

/** Another Server of the namespace that claims the same port of (possibly) the same pods. */
export function duplicateServerProblem(s: Obj<ServerSpec>, others: Obj<ServerSpec>[]): string | undefined {
  for (const o of others) {
    if (o.metadata.name === s.metadata.name) continue;
    if (String(o.spec?.port) !== String(s.spec?.port)) continue;
    const a = s.spec?.podSelector ?? s.spec?.externalWorkloadSelector;
    const b = o.spec?.podSelector ?? o.spec?.externalWorkloadSelector;
    if (!!s.spec?.podSelector !== !!o.spec?.podSelector) continue;
    if (selectorsOverlap(a, b)) {
      return `spec.port: Server "${o.metadata.name}" already selects port ${s.spec?.port} of the same pods ` +
        `(its selector overlaps spec.podSelector); a port may have only one Server`;
    }
  }
  return undefined;
}

export function serverAuthorizationProblems(s: Obj<ServerAuthorizationSpec>): string[] {
  const out: string[] = [];
  const spec = s.spec ?? {};
  if (!spec.server) out.push("spec.server: required");
  else if ((spec.server.name === undefined) === (spec.server.selector === undefined)) {
    out.push("spec.server: exactly one of name and selector must be set");
  } else out.push(...selectorProblems(spec.server.selector, "spec.server.selector"));
  const c = spec.client;
  if (!c) out.push("spec.client: required");
  else {
    if (!!c.unauthenticated === !!c.meshTLS) {
      out.push("spec.client: exactly one of unauthenticated and meshTLS must be set");
    }
    const named = (c.meshTLS?.identities?.length ?? 0) + (c.meshTLS?.serviceAccounts?.length ?? 0);
    if (c.meshTLS?.unauthenticatedTLS && named > 0) {
      out.push(
        "spec.client.meshTLS.unauthenticatedTLS: must be false when identities or serviceAccounts are listed",
      );
    }
    out.push(...networkProblems(c.networks, "spec.client.networks"));
    (c.meshTLS?.identities ?? []).forEach((id, i) => {
      const p = identityProblem(id, `spec.client.meshTLS.identities[${i}]`);
      if (p) out.push(p);
    });
    (c.meshTLS?.serviceAccounts ?? []).forEach((sa, i) => {
      if (!sa?.name) out.push(`spec.client.meshTLS.serviceAccounts[${i}].name: required`);
    });
  }
  return out;
}

const TARGET_KINDS: Record<string, string[]> = {
  Server: ["policy.linkerd.io"],
  HTTPRoute: ["policy.linkerd.io", "gateway.networking.k8s.io"],
  GRPCRoute: ["gateway.networking.k8s.io"],
  Namespace: ["", "core"],
};

export function authorizationPolicyProblems(p: Obj<AuthorizationPolicySpec>): string[] {
  const out: string[] = [];
  const ns = p.metadata.namespace;
  const t = p.spec?.targetRef;
  if (!t) out.push("spec.targetRef: required");
  else {
    const known = Object.keys(TARGET_KINDS).find((k) => asciiEqualFold(k, t.kind ?? ""));
    const groups = known === undefined ? undefined : TARGET_KINDS[known];
    if (!groups) {
      out.push(
        `spec.targetRef.kind: "${t.kind ?? ""}" is not one of ${Object.keys(TARGET_KINDS).join(", ")}`,
      );
    } else if (!groups.some((g) => refGroupIs(t.group, g))) {
      out.push(
        `spec.targetRef.group: "${t.group ?? ""}" is not a group of ${t.kind} (want ${
          groups.filter(Boolean).join(" or ") || '""'
        })`,
      );
    }
    if (isNamespaceRef(t) && ns && t.name !== ns) {
      out.push(`spec.targetRef.name: a Namespace target must be the policy's own namespace "${ns}"`);
    }
    if (t.namespace !== undefined && ns && t.namespace !== ns) {
      out.push(`spec.targetRef.namespace: targets must be in the policy's namespace "${ns}"`);
    }
  }
  let identities = 0, networks = 0;
  const refs = p.spec?.requiredAuthenticationRefs;
  if (refs === undefined) out.push("spec.requiredAuthenticationRefs: required (may be empty)");
  (refs ?? []).forEach((r, i) => {
    const f = `spec.requiredAuthenticationRefs[${i}]`;
    if (!r?.name) out.push(`${f}.name: required`);
    const kind = r?.kind ?? "";
    if (asciiEqualFold(kind, "MeshTLSAuthentication") || asciiEqualFold(kind, "NetworkAuthentication")) {
      if (!refGroupIs(r.group, "policy.linkerd.io")) {
        out.push(`${f}.group: ${r.kind} is in group policy.linkerd.io`);
      }
      if (asciiEqualFold(kind, "MeshTLSAuthentication")) identities++;
      else networks++;
    } else if (asciiEqualFold(kind, "ServiceAccount")) {
      if (!refGroupIs(r.group, "")) {
        out.push(`${f}.group: ServiceAccount is in the core group ("")`);
      }
      identities++;
    } else {
      out.push(
        `${f}.kind: "${r?.kind ?? ""}" is not MeshTLSAuthentication, NetworkAuthentication or ServiceAccount`,
      );
    }
  });
  if (identities > 1) {
    out.push("spec.requiredAuthenticationRefs: at most one MeshTLSAuthentication or ServiceAccount");
  }
  if (networks > 1) out.push("spec.requiredAuthenticationRefs: at most one NetworkAuthentication");
  return out;
}

export function meshTlsProblems(m: Obj<MeshTLSAuthenticationSpec>): string[] {
  const out: string[] = [];
  const ids = m.spec?.identities, refs = m.spec?.identityRefs;
  if (!ids?.length === !refs?.length) {
    out.push("spec.identities: exactly one of identities and identityRefs must be non-empty");
  }
  (ids ?? []).forEach((id, i) => {
    const p = identityProblem(id, `spec.identities[${i}]`);
    if (p) out.push(p);
  });
  (refs ?? []).forEach((r, i) => {
    const kind = r?.kind ?? "";
    if (!isServiceAccountRef(r) && !isNamespaceRef(r)) {
      out.push(`spec.identityRefs[${i}].kind: "${kind}" is not ServiceAccount or Namespace`);
    }
    if (!r?.name) out.push(`spec.identityRefs[${i}].name: required`);
    if (isNamespaceRef(r) && r.namespace !== undefined) {
      out.push(`spec.identityRefs[${i}].namespace: a Namespace is cluster-scoped; leave namespace unset`);
    }
  });
  return out;
}

export function networkAuthenticationProblems(n: Obj<NetworkAuthenticationSpec>): string[] {
  const nets = n.spec?.networks;
  if (!nets?.length) return ["spec.networks: must list at least one network"];
  return networkProblems(nets, "spec.networks");
}

function parentRefProblems(refs: HttpRouteSpec["parentRefs"], group: string): string[] {
  const out: string[] = [];
  (refs ?? []).forEach((p, i) => {
    const f = `spec.parentRefs[${i}]`;
    if (!p?.name) out.push(`${f}.name: required`);
    if (asciiEqualFold(p?.kind ?? "", "Server") && !refGroupIs(p.group, "policy.linkerd.io")) {
      out.push(`${f}.group: a Server parent is in group policy.linkerd.io`);
    }
    if (
      group === "policy.linkerd.io" && p?.kind !== undefined &&
      !["Server", "Service", "Gateway", "EgressNetwork"].some((k) => asciiEqualFold(k, p.kind!))
    ) {
      out.push(`${f}.kind: "${p.kind}" is not Server, Service, Gateway or EgressNetwork`);
    }
  });
  return out;
}

/**
 * Gateway API filters weft does not implement, admitted as Linkerd admits them: a route using
 * one is left out of the policy (its status says Accepted=False, UnsupportedValue).
 */
const UNIMPLEMENTED_HTTP_FILTERS: readonly string[] = ["RequestMirror", "URLRewrite", "ExtensionRef"];
const UNIMPLEMENTED_GRPC_FILTERS: readonly string[] = ["RequestMirror", "ExtensionRef"];

function backendProblems(
  refs: { kind?: string; group?: string; name: string }[] | undefined,
  field: string,
): string[] {
  const out: string[] = [];
  // Any backend kind is admitted, as Linkerd does: the route's status says ResolvedRefs=False
  // (InvalidKind) and the proxy fails that backend's share of requests.
  (refs ?? []).forEach((b, j) => {
    if (!b?.name) out.push(`${field}[${j}].name: required`);
  });
  return out;
}

function attempt(out: string[], f: () => unknown): void {
  try {
    f();
  } catch (e) {
    out.push((e as Error).message);
  }
}

// Linkerd refuses a redirect to a relative path: the Location it would build has no base.
function redirectPathProblem(
  path: { replaceFullPath?: string; replacePrefixMatch?: string } | undefined,
  field: string,
): string | undefined {
  for (const k of ["replaceFullPath", "replacePrefixMatch"] as const) {
    const v = path?.[k];
    if (v !== undefined && !v.startsWith("/")) {
      return `${field}.requestRedirect.path.${k}: "${v}" is not an absolute path (must start with "/")`;
    }
  }
  return undefined;
}

export function httpRouteProblems(r: Obj<HttpRouteSpec>, group: string): string[] {
  const out = parentRefProblems(r.spec?.parentRefs, group);
  out.push(...egressParentPortProblems(r.spec?.parentRefs, "HTTPRoute"));
  (r.spec?.rules ?? []).forEach((rule, i) => {
    (rule.matches ?? []).forEach((m, j) => {
      const f = `spec.rules[${i}].matches[${j}]`;
      if (
        m.path && m.path.type !== "RegularExpression" && m.path.value !== undefined &&
        !m.path.value.startsWith("/")
      ) {
        out.push(`${f}.path.value: "${m.path.value}" must start with "/"`);
      }
      attempt(out, () => httpMatch(m, f));
    });
    (rule.filters ?? []).forEach((fl, j) => {
      if (group === "gateway.networking.k8s.io" && UNIMPLEMENTED_HTTP_FILTERS.includes(fl.type)) return;
      attempt(out, () => convertFilter(fl, `spec.rules[${i}].filters[${j}]`));
      const p = redirectPathProblem(fl.requestRedirect?.path, `spec.rules[${i}].filters[${j}]`);
      if (p) out.push(p);
    });
    out.push(...backendProblems(rule.backendRefs, `spec.rules[${i}].backendRefs`));
    // Linkerd asks a port of Service backends on Gateway API HTTPRoutes only, and here (unlike
    // everywhere else) compares group and kind exactly: `kind: service` or `group: core` is
    // admitted without a port, and the index then fails that backend ("missing port").
    if (group === "gateway.networking.k8s.io") {
      (rule.backendRefs ?? []).forEach((b, j) => {
        const service = (b?.group ?? "") === "" && (b?.kind ?? "Service") === "Service";
        if (service && !b?.port) {
          out.push(`spec.rules[${i}].backendRefs[${j}].port: a Service backend needs a port (1..65535)`);
        }
      });
    }
    const ms: Partial<Record<"request" | "backendRequest", number>> = {};
    for (const k of ["request", "backendRequest"] as const) {
      const v = rule.timeouts?.[k];
      if (v !== undefined) {
        attempt(out, () => ms[k] = parseDurationMs(v, `spec.rules[${i}].timeouts.${k}`));
      }
    }
    // A backend attempt cannot outlive the whole request (Linkerd refuses it too).
    if (ms.request !== undefined && ms.backendRequest !== undefined && ms.backendRequest > ms.request) {
      out.push(
        `spec.rules[${i}].timeouts.backendRequest: ${rule.timeouts!.backendRequest} is longer than ` +
          `timeouts.request ${rule.timeouts!.request}`,
      );
    }
  });
  return out;
}

export function grpcRouteProblems(r: Obj<GrpcRouteSpec>): string[] {
  const out = parentRefProblems(r.spec?.parentRefs, "gateway.networking.k8s.io");
  out.push(...egressParentPortProblems(r.spec?.parentRefs, "GRPCRoute"));
  (r.spec?.rules ?? []).forEach((rule, i) => {
    (rule.matches ?? []).forEach((m, j) =>
      attempt(out, () => grpcMatch(m, `spec.rules[${i}].matches[${j}]`))
    );
    (rule.filters ?? []).forEach((fl, j) => {
      if (UNIMPLEMENTED_GRPC_FILTERS.includes(fl.type)) return;
      attempt(out, () => convertFilter(fl, `spec.rules[${i}].filters[${j}]`));
    });
    // Gateway API's own CRD rule (CEL on BackendObjectReference, exact comparison): a core Service
    // backend needs a port. weft's copy of the CRD has no such rule, so the webhook applies it.
    (rule.backendRefs ?? []).forEach((b, j) => {
      if ((b?.group ?? "") === "" && (b?.kind ?? "Service") === "Service" && !b?.port) {
        out.push(`spec.rules[${i}].backendRefs[${j}].port: a Service backend needs a port (1..65535)`);
      }
    });
    out.push(...backendProblems(rule.backendRefs, `spec.rules[${i}].backendRefs`));
  });
  return out;
}

/** The `/policy` admission handler. */
export function policyAdmissionHandler(servers: ServerLister): AdmissionHandler {
  return async (req: AdmissionRequest): Promise<AdmissionDecision> => {
    if (req.operation === "DELETE") return { problems: [] };
    const obj = req.object as Obj;
    if (!obj || typeof obj !== "object" || !obj.metadata) return { problems: ["object: missing"] };
    obj.metadata.namespace ??= req.namespace;
    const { group, kind } = req.kind;
    const key = `${group}/${kind}`;
    switch (key) {
      case "policy.linkerd.io/Server": {
        const problems = serverProblems(obj as Obj<ServerSpec>);
        if (problems.length === 0) {
          const dup = duplicateServerProblem(
            obj as Obj<ServerSpec>,
            await servers.servers(obj.metadata.namespace ?? ""),
          );
          if (dup) problems.push(dup);
        }
        return { problems };
      }
      case "policy.linkerd.io/ServerAuthorization":
        return {
          problems: serverAuthorizationProblems(obj as Obj<ServerAuthorizationSpec>),
          warnings: ["ServerAuthorization is deprecated; use AuthorizationPolicy"],
        };
      case "policy.linkerd.io/AuthorizationPolicy":
        return { problems: authorizationPolicyProblems(obj as Obj<AuthorizationPolicySpec>) };
      case "policy.linkerd.io/MeshTLSAuthentication":
        return { problems: meshTlsProblems(obj as Obj<MeshTLSAuthenticationSpec>) };
      case "policy.linkerd.io/NetworkAuthentication":
        return { problems: networkAuthenticationProblems(obj as Obj<NetworkAuthenticationSpec>) };
      case "policy.linkerd.io/HTTPRoute":
      case "gateway.networking.k8s.io/HTTPRoute":
        return { problems: httpRouteProblems(obj as Obj<HttpRouteSpec>, group) };
      case "gateway.networking.k8s.io/GRPCRoute":
        return { problems: grpcRouteProblems(obj as Obj<GrpcRouteSpec>) };
      case "gateway.networking.k8s.io/TLSRoute":
        return { problems: tlsRouteProblems(obj as Obj<TlsRouteSpec>) };
      case "gateway.networking.k8s.io/TCPRoute":
        return { problems: tcpRouteProblems(obj as Obj<TcpRouteSpec>) };
      case "policy.linkerd.io/EgressNetwork":
        return { problems: egressNetworkProblems(obj as Obj<EgressNetworkSpec>) };
      case "policy.linkerd.io/HTTPLocalRateLimitPolicy":
        return { problems: rateLimitPolicyProblems(obj as Obj<HttpLocalRateLimitPolicySpec>) };
      default:
        return { problems: [`kind: ${key} is not a policy resource this webhook validates`] };
    }
  };
}
