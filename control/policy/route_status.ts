/**
 * Route status, as Gateway API users read it: for every parentRef this controller serves (a
 * Server, a Service or an EgressNetwork), `Accepted` and `ResolvedRefs` conditions, plus one saying
 * so when attaching the route to a Server removed the default authorization of kubelet probes.
 * Every route kind Linkerd writes is covered: both HTTPRoutes, GRPCRoute, TLSRoute and TCPRoute.
 * `routeStatus` is pure; `RouteStatusWriter` writes only what changed, off the watch path.
 */
import type { PolicyConfig } from "./config.ts";
import { egressRouteProblem, isEgressNetworkRef } from "./egress_index.ts";
import { egressAccepted } from "./egress_status.ts";
import {
  inboundGrpcRoute,
  inboundHttpRoute,
  matchingServers,
  probePaths,
  serverSelectsPort,
} from "./inbound_index.ts";
import { outboundGrpcRoute, outboundHttpRoute, outboundL4Route } from "./outbound_index.ts";
import type {
  Condition,
  EgressNetwork,
  GrpcRoute,
  HttpRoute,
  Kind,
  ObjectRef,
  Pod,
  RouteParentStatus,
  RouteStatus,
  Server,
  TcpRoute,
  TlsRoute,
} from "./resources.ts";
import { GATEWAY_GROUP, POLICY_GROUP } from "./resources.ts";
import { isServerRef, isServiceBackendRef, isServiceRef } from "./ref_kind.ts";
import { selects } from "./selector.ts";
import type { PolicyStore, StoreChange } from "./store.ts";

export type RouteKind = "HTTPRoute" | "GatewayHTTPRoute" | "GRPCRoute" | "TLSRoute" | "TCPRoute";
export type AnyRoute = HttpRoute | GrpcRoute | TlsRoute | TcpRoute;

/** Condition type saying attaching this route removed the default probe authorization. */
export const PROBE_CONDITION = "weft.io/DefaultProbeAuthorization";

/** Linkerd's reason when a route of a kind that outranks this one has the same parent. */
export const CONFLICTED_REASON = "RouteReasonConflicted";

/** Linkerd's message for an EgressNetwork parent whose own status is not Accepted. */
export const EGRESS_PARENT_NOT_ACCEPTED = "EgressNetwork parent has not been accepted";

/** Linkerd's message for an EgressNetwork backend under any parent but that EgressNetwork. */
export const EGRESS_BACKEND_WRONG_PARENT =
  "EgressNetwork backend needs to be on a route that has an EgressNetwork parent";

/**
 * The kinds whose routes on the same parent win over a route of each kind (Gateway API GEP-1426,
 * in Linkerd's order gRPC > HTTP > TLS > TCP); the outbound indexes pick routes the same way.
 */
const OUTRANKED_BY: Record<RouteKind, RouteKind[]> = {
  GRPCRoute: [],
  HTTPRoute: ["GRPCRoute"],
  GatewayHTTPRoute: ["GRPCRoute"],
  TLSRoute: ["GRPCRoute", "HTTPRoute", "GatewayHTTPRoute"],
  TCPRoute: ["GRPCRoute", "HTTPRoute", "GatewayHTTPRoute", "TLSRoute"],
};

const isL4 = (kind: RouteKind) => kind === "TLSRoute" || kind === "TCPRoute";

function cond(
  type: string,
  ok: boolean,
  reason: string,
  message: string,
  generation: number | undefined,
  now: string,
): Condition {
  return {
    type,
    status: ok ? "True" : "False",
    reason,
    message,
    lastTransitionTime: now,
    observedGeneration: generation,
  };
}

function probeLoss(store: PolicyStore, server: Server): string | undefined {
  const ns = server.metadata.namespace ?? "";
  const hits: string[] = [];
  for (const pod of store.list<Pod>("Pod", ns)) {
    if (!selects(server.spec?.podSelector, pod.metadata.labels)) continue;
    const ports = new Set<number>();
    for (const c of pod.spec?.containers ?? []) for (const p of c.ports ?? []) ports.add(p.containerPort);
    for (const c of pod.spec?.containers ?? []) {
      for (const pr of [c.livenessProbe, c.readinessProbe, c.startupProbe]) {
        const port = pr?.httpGet?.port;
        if (typeof port === "number") ports.add(port);
      }
    }
    for (const port of ports) {
      if (!serverSelectsPort(server, pod, port) || matchingServers(store, pod, port)[0] !== server) continue;
      const paths = probePaths(pod, port);
      if (paths.length > 0) hits.push(`${pod.metadata.name}:${port} ${paths.join(",")}`);
    }
  }
  if (hits.length === 0) return undefined;
  const shown = hits.slice(0, 3).join("; ") + (hits.length > 3 ? `; and ${hits.length - 3} more` : "");
  return `routes attached to Server ${server.metadata.name} replace its default routes, so kubelet probes ` +
    `(${shown}) are no longer authorized by default; attach a route for the probe paths and authorize it`;
}

/**
 * A parent as Linkerd compares parents for conflicts: kind, namespace (the route's when unset),
 * name and, for Services and EgressNetworks, the port as written. `withPort: false` gives the
 * parent object alone. Undefined for parents this controller does not serve.
 */
function parentKey(p: ObjectRef, routeNs: string, withPort = true): string | undefined {
  const kind = isServerRef(p)
    ? "Server"
    : isServiceRef(p)
    ? "Service"
    : isEgressNetworkRef(p)
    ? "EgressNetwork"
    : undefined;
  if (!kind) return undefined;
  const port = kind !== "Server" && withPort ? `:${p.port ?? ""}` : "";
  return `${kind}/${p.namespace ?? routeNs}/${p.name}${port}`;
}

/** Whether a route of a kind that outranks `kind` has the parent `key`, in any namespace. */
function conflicted(store: PolicyStore, kind: RouteKind, key: string): boolean {
  for (const k of OUTRANKED_BY[kind]) {
    for (const r of store.list<AnyRoute>(k)) {
      const ns = r.metadata.namespace ?? "";
      if ((r.spec?.parentRefs ?? []).some((p) => parentKey(p, ns) === key)) return true;
    }
  }
  return false;
}

/** The status this controller owns on a route: one entry per served parentRef. */
export function routeStatus(
  store: PolicyStore,
  cfg: PolicyConfig,
  kind: RouteKind,
  route: AnyRoute,
  now: string,
): RouteParentStatus[] {
  const ns = route.metadata.namespace ?? "";
  const gen = route.metadata.generation;
  const group = kind === "HTTPRoute" ? POLICY_GROUP : GATEWAY_GROUP;
  const out: RouteParentStatus[] = [];
  for (const parentRef of route.spec?.parentRefs ?? []) {
    const key = parentKey(parentRef, ns);
    if (!key) continue;
    const parentNs = parentRef.namespace ?? ns;
    const conditions: Condition[] = [];
    const refuse = (reason: string, message: string) =>
      conditions.push(cond("Accepted", false, reason, message, gen, now));
    let problem: string | undefined;
    let server: Server | undefined;
    if (isServerRef(parentRef)) {
      server = store.get<Server>("Server", parentNs, parentRef.name);
      if (!server || parentNs !== ns) {
        refuse(
          "NoMatchingParent",
          server
            ? "a Server parent must be in the route's namespace"
            : `Server ${parentNs}/${parentRef.name} not found`,
        );
      } else if (isL4(kind) && conflicted(store, kind, key)) {
        refuse(CONFLICTED_REASON, conflictMessage(kind));
      } else if (!isL4(kind)) {
        // Inbound policy has no TLS or TCP routes (nor has Linkerd's): those are accepted as they are.
        try {
          if (kind === "GRPCRoute") inboundGrpcRoute(store, route as GrpcRoute, cfg);
          else inboundHttpRoute(store, group, route as HttpRoute, cfg);
        } catch (e) {
          problem = (e as Error).message;
        }
      }
    } else if (isServiceRef(parentRef)) {
      const svc = store.service(parentNs, parentRef.name);
      // Linkerd's rule: a Service parent needs a ClusterIP.
      const headless = svc !== undefined && (!svc.spec?.clusterIP || svc.spec.clusterIP === "None");
      if (headless) {
        refuse("NoMatchingParent", "parent service must have a ClusterIP");
      } else if (!svc) {
        refuse("NoMatchingParent", `Service ${parentNs}/${parentRef.name} not found`);
      } else if (
        parentRef.port !== undefined && !(svc.spec?.ports ?? []).some((p) => p.port === parentRef.port)
      ) {
        refuse("NoMatchingParent", `Service ${parentNs}/${parentRef.name} has no port ${parentRef.port}`);
      } else if (conflicted(store, kind, key)) {
        refuse(CONFLICTED_REASON, conflictMessage(kind));
      } else {
        try {
          const port = parentRef.port ?? svc.spec?.ports?.[0]?.port ?? 80;
          if (kind === "GRPCRoute") outboundGrpcRoute(store, route as GrpcRoute, svc, port, cfg);
          else if (isL4(kind)) outboundL4Route(store, kind as "TLSRoute" | "TCPRoute", route, svc, port, cfg);
          else outboundHttpRoute(store, group, route as HttpRoute, svc, port, cfg);
        } catch (e) {
          problem = (e as Error).message;
        }
      }
    } else {
      const en = store.get<EgressNetwork>("EgressNetwork", parentNs, parentRef.name);
      if (!en) {
        refuse("NoMatchingParent", `EgressNetwork ${parentNs}/${parentRef.name} not found`);
      } else if (egressAccepted(en, cfg).status !== "True") {
        refuse("NoMatchingParent", EGRESS_PARENT_NOT_ACCEPTED);
      } else if (conflicted(store, kind, key)) {
        refuse(CONFLICTED_REASON, conflictMessage(kind));
      } else {
        problem = egressRouteProblem(store, cfg, en, kind, route, parentRef.port ?? 0);
      }
    }
    if (conditions.length === 0) {
      conditions.push(
        problem
          ? cond("Accepted", false, "UnsupportedValue", problem, gen, now)
          : cond("Accepted", true, "Accepted", "Route was valid", gen, now),
      );
    }
    // As Linkerd: a Server parent gets only Accepted; Service and EgressNetwork parents also ResolvedRefs.
    if (!isServerRef(parentRef)) {
      conditions.push(resolvedRefs(store, route, ns, parentRef, parentNs, gen, now));
    }
    if (server && !isL4(kind) && conditions[0].status === "True") {
      const loss = probeLoss(store, server);
      if (loss) conditions.push(cond(PROBE_CONDITION, false, "ProbesNotAuthorized", loss, gen, now));
    }
    out.push({
      parentRef: statusParentRef(parentRef, parentNs),
      controllerName: cfg.controllerName,
      conditions,
    });
  }
  return out;
}

function conflictMessage(kind: RouteKind): string {
  const names = OUTRANKED_BY[kind].filter((k) => k !== "GatewayHTTPRoute");
  return `a ${names.join(" or ")} with the same parent takes precedence over this ${kindName(kind)}`;
}

const kindName = (k: RouteKind) => k === "GatewayHTTPRoute" ? "HTTPRoute" : k;

/**
 * The parentRef as Linkerd writes it in status: group and kind spelled canonically, the
 * namespace always filled in; a Server parent without port or sectionName, a Service parent
 * with group "core" and an EgressNetwork parent with its group, each with its port when the
 * route gave one.
 */
function statusParentRef(p: ObjectRef, namespace: string): ObjectRef {
  if (isServerRef(p)) return { group: POLICY_GROUP, kind: "Server", namespace, name: p.name };
  const out: ObjectRef = isServiceRef(p)
    ? { group: "core", kind: "Service", namespace, name: p.name }
    : { group: POLICY_GROUP, kind: "EgressNetwork", namespace, name: p.name };
  if (p.port !== undefined) out.port = p.port;
  return out;
}

/**
 * ResolvedRefs over every rule's backendRefs, judged in order as Linkerd does: the first backend
 * that is not a Service gives InvalidKind, the first Service that does not exist BackendNotFound.
 * An EgressNetwork backend must exist (BackendNotFound) and be the route's EgressNetwork parent
 * itself (InvalidKind, Linkerd's message).
 */
function resolvedRefs(
  store: PolicyStore,
  route: AnyRoute,
  ns: string,
  parentRef: ObjectRef,
  parentNs: string,
  gen: number | undefined,
  now: string,
): Condition {
  for (const rule of route.spec?.rules ?? []) {
    for (const b of rule.backendRefs ?? []) {
      const bns = b.namespace ?? ns;
      if (isEgressNetworkRef(b)) {
        if (!store.get("EgressNetwork", bns, b.name)) {
          const msg = `backend EgressNetwork ${bns}/${b.name} not found`;
          return cond("ResolvedRefs", false, "BackendNotFound", msg, gen, now);
        }
        const same = isEgressNetworkRef(parentRef) && parentRef.name === b.name && parentNs === bns;
        if (!same) return cond("ResolvedRefs", false, "InvalidKind", EGRESS_BACKEND_WRONG_PARENT, gen, now);
        continue;
      }
      if (!isServiceBackendRef(b)) {
        const kind = `${b.kind ?? ""}${b.group ? `.${b.group}` : ""}`;
        return cond(
          "ResolvedRefs",
          false,
          "InvalidKind",
          `backend kind ${kind} is not supported; use Service`,
          gen,
          now,
        );
      }
      if (!store.service(bns, b.name)) {
        return cond(
          "ResolvedRefs",
          false,
          "BackendNotFound",
          `backend Service ${bns}/${b.name} not found`,
          gen,
          now,
        );
      }
    }
  }
  return cond("ResolvedRefs", true, "ResolvedRefs", "Resolved all references", gen, now);
}

/** Whether two parent statuses say the same thing (transition times aside). */
function sameParents(a: RouteParentStatus[], b: RouteParentStatus[]): boolean {
  const strip = (l: RouteParentStatus[]) =>
    JSON.stringify(
      l.map((p) => ({ ...p, conditions: p.conditions.map((c) => ({ ...c, lastTransitionTime: "" })) })),
    );
  return strip(a) === strip(b);
}

/** Keeps the transition time of conditions whose status did not change. */
function keepTransitions(next: RouteParentStatus[], prev: RouteParentStatus[]): void {
  for (const p of next) {
    const old = prev.find((q) => JSON.stringify(q.parentRef) === JSON.stringify(p.parentRef));
    for (const c of p.conditions) {
      const oc = old?.conditions.find((x) => x.type === c.type);
      if (oc && oc.status === c.status) c.lastTransitionTime = oc.lastTransitionTime;
    }
  }
}

/** The full `status` to write: other controllers' parents kept, ours replaced. */
export function mergedStatus(
  current: RouteStatus | undefined,
  ours: RouteParentStatus[],
  controllerName: string,
): RouteStatus | undefined {
  const prevOurs = (current?.parents ?? []).filter((p) => p.controllerName === controllerName);
  keepTransitions(ours, prevOurs);
  if (sameParents(prevOurs, ours)) return undefined;
  const others = (current?.parents ?? []).filter((p) => p.controllerName !== controllerName);
  return { parents: [...others, ...ours] };
}

export interface StatusClient {
  patchStatus(kind: Kind, namespace: string, name: string, status: unknown): Promise<void>;
}

export interface StatusWriterOptions {
  delayMs?: number;
  log?: (m: string) => void;
  now?: () => Date;
  /**
   * Whether this replica may write (it leads the status Lease, control/k8s/leader_election.ts);
   * always when unset. Checked before every patch, so a replica that stops leading stops at once.
   */
  canWrite?: () => boolean;
}

export function canWrite(opts: StatusWriterOptions): boolean {
  return opts.canWrite?.() ?? true;
}

const ROUTE_KINDS: RouteKind[] = ["HTTPRoute", "GatewayHTTPRoute", "GRPCRoute", "TLSRoute", "TCPRoute"];
const ROUTE_KIND_SET = new Set<string>(ROUTE_KINDS);

/**
 * Recomputes the status of routes in namespaces that changed, after a short delay so bursts
 * coalesce, and patches those that differ. Patches run one at a time, never on the watch path.
 */
export class RouteStatusWriter {
  readonly #dirty = new Set<string>();
  #timer: ReturnType<typeof setTimeout> | undefined;
  #running = false;
  readonly #unlisten: () => void;
  errors = 0;
  writes = 0;

  constructor(
    readonly store: PolicyStore,
    readonly cfg: PolicyConfig,
    readonly client: StatusClient,
    readonly opts: StatusWriterOptions = {},
  ) {
    this.#unlisten = store.listen((c) => this.#onChange(c));
  }

  close(): void {
    this.#unlisten();
    if (this.#timer) clearTimeout(this.#timer);
  }

  /** Rechecks every route (on gaining leadership: the followers wrote nothing meanwhile). */
  resync(): void {
    for (const k of ROUTE_KINDS) {
      for (const r of this.store.list(k)) this.#dirty.add(r.metadata.namespace ?? "");
    }
    if (!this.#timer) this.#timer = setTimeout(() => this.#run(), this.opts.delayMs ?? 50);
  }

  #onChange(c: StoreChange): void {
    if (c.kind === "Namespace" || c.kind === "MeshTLSAuthentication" || c.kind === "NetworkAuthentication") {
      return;
    }
    this.#dirty.add(c.namespace ?? "");
    // Cross-namespace backends and consumer routes: a Service or EgressNetwork change may matter elsewhere.
    if (c.kind === "Service" || c.kind === "EgressNetwork") {
      for (const k of ROUTE_KINDS) {
        for (const r of this.store.list(k)) this.#dirty.add(r.metadata.namespace ?? "");
      }
    } else if (ROUTE_KIND_SET.has(c.kind)) {
      // Conflicts: a route may change whether other routes on its parents, in any namespace, win.
      const parents = new Set<string>();
      for (const o of [c.object, c.old]) {
        const r = o as AnyRoute | undefined;
        for (const p of r?.spec?.parentRefs ?? []) {
          const k = parentKey(p, r?.metadata.namespace ?? "", false);
          if (k) parents.add(k);
        }
      }
      if (parents.size > 0) {
        for (const k of ROUTE_KINDS) {
          for (const r of this.store.list<AnyRoute>(k)) {
            const rns = r.metadata.namespace ?? "";
            if ((r.spec?.parentRefs ?? []).some((p) => parents.has(parentKey(p, rns, false) ?? ""))) {
              this.#dirty.add(rns);
            }
          }
        }
      }
    }
    if (!this.#timer) this.#timer = setTimeout(() => this.#run(), this.opts.delayMs ?? 50);
  }

  async #run(): Promise<void> {
    this.#timer = undefined;
    if (this.#running) {
      this.#timer = setTimeout(() => this.#run(), this.opts.delayMs ?? 50);
      return;
    }
    this.#running = true;
    try {
      const namespaces = [...this.#dirty];
      this.#dirty.clear();
      // A follower forgets what changed: resync() on gaining leadership rechecks everything.
      if (!canWrite(this.opts)) return;
      for (const ns of namespaces) await this.syncNamespace(ns);
    } finally {
      this.#running = false;
    }
  }

  async syncNamespace(ns: string): Promise<void> {
    const now = (this.opts.now?.() ?? new Date()).toISOString().replace(/\.[0-9]+Z$/, "Z");
    for (const kind of ROUTE_KINDS) {
      for (const route of [...this.store.list<AnyRoute>(kind, ns)]) {
        const ours = routeStatus(this.store, this.cfg, kind, route, now);
        if (ours.length === 0) continue;
        const status = mergedStatus(route.status, ours, this.cfg.controllerName);
        if (!status) continue;
        if (!canWrite(this.opts)) return;
        try {
          await this.client.patchStatus(kind, ns, route.metadata.name, status);
          this.writes++;
        } catch (e) {
          this.errors++;
          this.opts.log?.(`route status: ${(e as Error).message}`);
        }
      }
    }
  }
}
