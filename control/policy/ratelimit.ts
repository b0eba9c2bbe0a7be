/**
 * HTTPLocalRateLimitPolicy → the `HttpLocalRateLimit` of an inbound Server, and the policy's
 * `Accepted` status. Pure: (store, config) in, proto message or status out.
 *
 * Several policies may name one Server; as in Linkerd, only the first by creation time (then name)
 * applies and is `Accepted`, the others are `Accepted=False` (`RateLimitReasonAlreadyExists`).
 */
import type { HttpLocalRateLimit, ProxyProtocol } from "../../proto/gen/inbound.ts";
import { formatWorkloadIdentity } from "../../proto/identity_name.ts";
import type { PolicyConfig } from "./config.ts";
import { canonicalKind, isServerRef, isServiceAccountRef } from "./ref_kind.ts";
import type {
  Condition,
  HttpLocalRateLimitPolicy,
  HttpLocalRateLimitPolicyStatus,
  RateLimitLimit,
  Server,
} from "./resources.ts";
import { POLICY_GROUP } from "./resources.ts";
import type { PolicyStore } from "./store.ts";

export const RATE_LIMIT_KIND = "HTTPLocalRateLimitPolicy";

/** Linkerd's condition reasons for this kind. */
export const RateLimitReasons = {
  accepted: "Accepted",
  alreadyExists: "RateLimitReasonAlreadyExists",
  noMatchingTarget: "NoMatchingTarget",
} as const;

function policies(store: PolicyStore, ns: string): Iterable<HttpLocalRateLimitPolicy> {
  return store.list<HttpLocalRateLimitPolicy>("HTTPLocalRateLimitPolicy", ns);
}

/** Oldest first (a policy without a creation time after those with one), then by name. */
function precedence(a: HttpLocalRateLimitPolicy, b: HttpLocalRateLimitPolicy): number {
  const ta = a.metadata.creationTimestamp, tb = b.metadata.creationTimestamp;
  if (ta !== tb) {
    if (ta === undefined) return 1;
    if (tb === undefined) return -1;
    const d = Date.parse(ta) - Date.parse(tb);
    if (d !== 0 && !Number.isNaN(d)) return d;
  }
  return a.metadata.name < b.metadata.name ? -1 : a.metadata.name > b.metadata.name ? 1 : 0;
}

/** The name of the Server a policy targets, or undefined when its targetRef is not a Server. */
export function targetServerName(p: HttpLocalRateLimitPolicy): string | undefined {
  const t = p.spec?.targetRef;
  return t && isServerRef(t) && t.name ? t.name : undefined;
}

/** The policies targeting Server `name` of `ns`, the one that applies first. */
export function policiesForServer(store: PolicyStore, ns: string, name: string): HttpLocalRateLimitPolicy[] {
  const out: HttpLocalRateLimitPolicy[] = [];
  for (const p of policies(store, ns)) if (targetServerName(p) === name) out.push(p);
  return out.sort(precedence);
}

function limit(l: RateLimitLimit | undefined): { requestsPerSecond: number } | undefined {
  return l?.requestsPerSecond === undefined ? undefined : { requestsPerSecond: l.requestsPerSecond };
}

/**
 * The proxy message of one policy. Throws (naming the field) on what admission refuses: a client
 * ref that is not a ServiceAccount, or a name that cannot form an identity.
 */
export function rateLimitMessage(p: HttpLocalRateLimitPolicy, cfg: PolicyConfig): HttpLocalRateLimit {
  const ns = p.metadata.namespace ?? "";
  const overrides = (p.spec?.overrides ?? []).map((o, i) => ({
    limit: { requestsPerSecond: o.requestsPerSecond ?? 0 },
    clients: {
      identities: (o.clientRefs ?? []).map((ref, j) => {
        if (!isServiceAccountRef(ref)) {
          throw new Error(
            `spec.overrides[${i}].clientRefs[${j}]: ${canonicalKind(ref)} is not a ServiceAccount`,
          );
        }
        return {
          name: formatWorkloadIdentity({
            serviceAccount: ref.name,
            namespace: ref.namespace || ns,
            controlPlaneNamespace: cfg.controlPlaneNamespace,
            trustDomain: cfg.identityTrustDomain,
          }),
        };
      }),
    },
  }));
  return {
    metadata: {
      kind: {
        $case: "resource",
        value: {
          group: POLICY_GROUP,
          kind: RATE_LIMIT_KIND,
          name: p.metadata.name,
          namespace: ns,
          section: "",
          port: 0,
        },
      },
    },
    total: limit(p.spec?.total),
    identity: limit(p.spec?.identity),
    overrides,
  };
}

/** The rate limit of a Server: its first policy that converts, or undefined without one. */
export function serverRateLimit(
  store: PolicyStore,
  server: Server,
  cfg: PolicyConfig,
): HttpLocalRateLimit | undefined {
  for (const p of policiesForServer(store, server.metadata.namespace ?? "", server.metadata.name)) {
    try {
      return rateLimitMessage(p, cfg);
    } catch {
      // Admission refuses these; one stored anyway (webhook bypassed) is skipped, as Linkerd's index does.
    }
  }
  return undefined;
}

/**
 * Puts `limit` on the HTTP variants of a Server's protocol (Detect, Http1, Http2). The proxy API has
 * no rate limit field for gRPC, opaque or TLS servers, so those stay as they are, as in Linkerd.
 */
export function withRateLimit(protocol: ProxyProtocol, limit: HttpLocalRateLimit | undefined): ProxyProtocol {
  if (!limit) return protocol;
  const k = protocol.kind;
  if (k?.$case === "detect") {
    return { kind: { $case: "detect", value: { ...k.value, httpLocalRateLimit: limit } } };
  }
  if (k?.$case === "http1") return { kind: { $case: "http1", value: { ...k.value, localRateLimit: limit } } };
  if (k?.$case === "http2") return { kind: { $case: "http2", value: { ...k.value, localRateLimit: limit } } };
  return protocol;
}

/**
 * The status this controller owns on a policy, or undefined when its target is not a Server
 * (Linkerd writes nothing then; admission refuses such policies).
 */
export function rateLimitStatus(
  store: PolicyStore,
  p: HttpLocalRateLimitPolicy,
  now: string,
): HttpLocalRateLimitPolicyStatus | undefined {
  const name = targetServerName(p);
  if (name === undefined) return undefined;
  const ns = p.metadata.namespace ?? "";
  const cond = (ok: boolean, reason: string, message: string): Condition => ({
    type: "Accepted",
    status: ok ? "True" : "False",
    reason,
    message,
    lastTransitionTime: now,
    ...(p.metadata.generation !== undefined ? { observedGeneration: p.metadata.generation } : {}),
  });
  let condition: Condition;
  if (!store.get<Server>("Server", ns, name)) {
    condition = cond(false, RateLimitReasons.noMatchingTarget, `Server ${ns}/${name} not found`);
  } else {
    const first = policiesForServer(store, ns, name)[0];
    condition = first?.metadata.name === p.metadata.name
      ? cond(true, RateLimitReasons.accepted, `applies to Server ${name}`)
      : cond(
        false,
        RateLimitReasons.alreadyExists,
        `Server ${name} already has HTTPLocalRateLimitPolicy ${first?.metadata.name}, which is older`,
      );
  }
  return { conditions: [condition], targetRef: { group: POLICY_GROUP, kind: "Server", name } };
}

/**
 * The status to write, or undefined when the current one already says the same (transition times
 * aside). A condition whose status did not change keeps its transition time.
 */
export function statusUpdate(
  current: HttpLocalRateLimitPolicyStatus | undefined,
  next: HttpLocalRateLimitPolicyStatus,
): HttpLocalRateLimitPolicyStatus | undefined {
  for (const c of next.conditions ?? []) {
    const old = current?.conditions?.find((x) => x.type === c.type);
    if (old && old.status === c.status && old.lastTransitionTime) {
      c.lastTransitionTime = old.lastTransitionTime;
    }
  }
  const strip = (s: HttpLocalRateLimitPolicyStatus | undefined) =>
    JSON.stringify({
      conditions: (s?.conditions ?? []).map((c) => ({
        type: c.type,
        status: c.status,
        reason: c.reason,
        message: c.message,
        observedGeneration: c.observedGeneration,
      })),
      targetRef: s?.targetRef
        ? { group: s.targetRef.group, kind: s.targetRef.kind, name: s.targetRef.name }
        : undefined,
    });
  return strip(current) === strip(next) ? undefined : next;
}
