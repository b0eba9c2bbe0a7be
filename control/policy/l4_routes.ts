/**
 * TLSRoutes and TCPRoutes as outbound policy routes, one conversion for every parent kind (a
 * Service or an EgressNetwork), as Linkerd converts them: one rule whose backends are the route's
 * backendRefs (or, when it names none, the parent's own backend), an unusable backendRef kept at
 * its weight with an `invalid` filter that refuses the connection. What differs per parent is
 * only how a backendRef resolves and what the parent's own backend is.
 */
// Plain objects, structurally the generated messages (this file stays off the proto/gen import allowlist;
// the callers' declared message types check the shapes).
import type { BackendRef, TcpRoute, TlsRoute } from "./resources.ts";
import { GATEWAY_GROUP } from "./resources.ts";
import { hostMatch, routeMetadata } from "./route_convert.ts";

/** What a backendRef resolved to under a parent: the backend, and why it refuses, if it does. */
export interface ResolvedBackend<B> {
  backend: B;
  invalid?: string;
}

/** The parent a connection-level route is converted for. */
export interface L4Parent<B> {
  /** The parent's own backend, for a route that names no backends. */
  deflt: B;
  /** A backendRef of a route in namespace `routeNs`, resolved under this parent. */
  resolve(ref: BackendRef, routeNs: string): ResolvedBackend<B>;
}

/** The filter that refuses connections over an unusable backend, with why. */
function invalidFilter(message: string) {
  return { kind: { $case: "invalid" as const, value: { message } } };
}

/** TLS and opaque routes share one rule shape: a distribution, and filters that refuse. */
function l4Rule<B>(parent: L4Parent<B>, route: TlsRoute | TcpRoute) {
  const ns = route.metadata.namespace ?? "";
  const refs = (route.spec?.rules ?? []).flatMap((r) => r.backendRefs ?? []);
  if (refs.length === 0) {
    return {
      backends: {
        kind: {
          $case: "firstAvailable" as const,
          value: { backends: [{ backend: parent.deflt, filters: [] }] },
        },
      },
      filters: [] as never[],
    };
  }
  return {
    backends: {
      kind: {
        $case: "randomAvailable" as const,
        value: {
          backends: refs.map((ref) => {
            const r = parent.resolve(ref, ns);
            const filters = r.invalid ? [invalidFilter(r.invalid)] : [];
            return { weight: ref.weight ?? 1, backend: { backend: r.backend, filters } };
          }),
        },
      },
    },
    filters: [] as never[],
  };
}

/** A TLSRoute: its hostnames as SNI matches (exact, or `*.` suffixes) and one rule. */
export function l4TlsRoute<B>(parent: L4Parent<B>, route: TlsRoute) {
  return {
    metadata: routeMetadata(GATEWAY_GROUP, "TLSRoute", route),
    snis: (route.spec?.hostnames ?? []).map((h) => {
      const m = hostMatch(h).match;
      return m?.$case === "suffix"
        ? { match: { $case: "suffix" as const, value: { reverseLabels: m.value.reverseLabels } } }
        : { match: { $case: "exact" as const, value: m?.$case === "exact" ? m.value : h } };
    }),
    rules: [l4Rule(parent, route)],
  };
}

/** A TCPRoute, as an opaque route with one rule. */
export function l4TcpRoute<B>(parent: L4Parent<B>, route: TcpRoute) {
  return { metadata: routeMetadata(GATEWAY_GROUP, "TCPRoute", route), rules: [l4Rule(parent, route)] };
}
