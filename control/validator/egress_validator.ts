/**
 * Admission of the egress kinds (issue 24), with the rules Linkerd applies: an EgressNetwork needs
 * a traffic policy and well-formed networks; TLSRoutes and TCPRoutes name parents and Service or
 * EgressNetwork backends; an EgressNetwork parent of an HTTPRoute or GRPCRoute must say which port
 * its routes apply to (TLS and TCP routes may leave it out). Each problem starts with its field.
 */
import { isEgressNetworkRef, TRAFFIC_POLICIES } from "../policy/egress_index.ts";
import { networkContains, parseNetwork } from "../policy/network_cidr.ts";
import { isServiceBackendRef } from "../policy/ref_kind.ts";
import type {
  BackendRef,
  EgressNetworkSpec,
  L4RouteRule,
  Obj,
  ObjectRef,
  TcpRouteSpec,
  TlsRouteSpec,
} from "../policy/resources.ts";

const HOSTNAME = /^(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

function networkProblem(text: unknown, field: string): string | undefined {
  if (typeof text !== "string") return `${field}: must be a CIDR string`;
  try {
    parseNetwork(text);
    return undefined;
  } catch (e) {
    return `${field}: ${(e as Error).message}`;
  }
}

export function egressNetworkProblems(en: Obj<EgressNetworkSpec>): string[] {
  const out: string[] = [];
  const tp = en.spec?.trafficPolicy;
  if (tp === undefined) out.push(`spec.trafficPolicy: required (${TRAFFIC_POLICIES.join(" or ")})`);
  else if (!(TRAFFIC_POLICIES as readonly string[]).includes(tp)) {
    out.push(`spec.trafficPolicy: "${tp}" is not ${TRAFFIC_POLICIES.join(" or ")}`);
  }
  // Linkerd: networks left out means every address outside the cluster networks; an empty list is refused.
  if (en.spec?.networks !== undefined && en.spec.networks.length === 0) {
    out.push(
      "spec.networks: must list at least one network (leave it out for every address outside the cluster)",
    );
  }
  (en.spec?.networks ?? []).forEach((n, i) => {
    const f = `spec.networks[${i}]`;
    const p = networkProblem(n?.cidr, `${f}.cidr`);
    if (p) out.push(p);
    (n?.except ?? []).forEach((e, j) => {
      const q = networkProblem(e, `${f}.except[${j}]`);
      if (q) out.push(q);
      else if (!p && networkContains(parseNetwork(e), parseNetwork(n.cidr))) {
        out.push(`${f}.except[${j}]: "${e}" covers all of cidr "${n.cidr}"`);
      } else if (!p && !networkContains(parseNetwork(n.cidr), parseNetwork(e))) {
        out.push(`${f}.except[${j}]: "${e}" is not inside cidr "${n.cidr}"`);
      }
    });
  });
  return out;
}

/**
 * For every route kind: each EgressNetwork parent needs a port, since an EgressNetwork covers
 * every port of its addresses and a route applies to one protocol on one port.
 */
export function egressParentPortProblems(refs: ObjectRef[] | undefined, routeKind: string): string[] {
  const out: string[] = [];
  (refs ?? []).forEach((p, i) => {
    if (isEgressNetworkRef(p) && p.port === undefined) {
      out.push(`spec.parentRefs[${i}].port: an EgressNetwork parent of a ${routeKind} needs a port`);
    }
  });
  return out;
}

/** Backends a route may name: Services (with a port) and EgressNetworks. */
export function egressAwareBackendProblems(refs: BackendRef[] | undefined, field: string): string[] {
  const out: string[] = [];
  (refs ?? []).forEach((b, j) => {
    const f = `${field}[${j}]`;
    if (!b?.name) out.push(`${f}.name: required`);
    if (isEgressNetworkRef(b)) return;
    if (!isServiceBackendRef(b)) {
      out.push(`${f}.kind: backends must be Services or EgressNetworks, got ${b?.group ?? ""}/${b?.kind}`);
    } else if (!b.port) out.push(`${f}.port: a Service backend needs a port (1..65535)`);
  });
  return out;
}

function l4RouteProblems(
  kind: string,
  parentRefs: ObjectRef[] | undefined,
  rules: L4RouteRule[] | undefined,
): string[] {
  const out: string[] = [];
  (parentRefs ?? []).forEach((p, i) => {
    if (!p?.name) out.push(`spec.parentRefs[${i}].name: required`);
  });
  out.push(...egressParentPortProblems(parentRefs, kind));
  // Linkerd's proxy API carries one rule per TLS or TCP route, and its admission says so.
  if (rules?.length !== 1) out.push(`spec.rules: a ${kind} has exactly one rule, got ${rules?.length ?? 0}`);
  (rules ?? []).forEach((r, i) => {
    out.push(...egressAwareBackendProblems(r?.backendRefs, `spec.rules[${i}].backendRefs`));
  });
  return out;
}

export function tlsRouteProblems(r: Obj<TlsRouteSpec>): string[] {
  const out = l4RouteProblems("TLSRoute", r.spec?.parentRefs, r.spec?.rules);
  (r.spec?.hostnames ?? []).forEach((h, i) => {
    if (typeof h !== "string" || !HOSTNAME.test(h)) {
      out.push(`spec.hostnames[${i}]: "${h}" is not a hostname or a "*." wildcard`);
    }
  });
  return out;
}

export function tcpRouteProblems(r: Obj<TcpRouteSpec>): string[] {
  return l4RouteProblems("TCPRoute", r.spec?.parentRefs, r.spec?.rules);
}
