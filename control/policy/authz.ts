/**
 * Client authorizations: AuthorizationPolicy (with its Mesh/Network authentications and
 * ServiceAccount refs), legacy ServerAuthorization, and the default policies, each turned into
 * the `inbound.Authz` message the proxy checks connections and requests against.
 */
import type { Authn, Authz, Identity, IdentitySuffix, Network } from "../../proto/gen/inbound.ts";
import type { Metadata } from "../../proto/gen/meta.ts";
import type { DefaultInboundPolicy } from "../../proto/env.ts";
import { formatWorkloadIdentity } from "../../proto/identity_name.ts";
import { toIpNetwork } from "../../proto/ip.ts";
import { parseNetwork } from "./network_cidr.ts";
import type { PolicyConfig } from "./config.ts";
import type {
  AuthorizationPolicy,
  MeshTLSAuthentication,
  NetworkSpec,
  ObjectRef,
  ServerAuthorization,
} from "./resources.ts";
import { POLICY_GROUP } from "./resources.ts";
import {
  isMeshTlsAuthenticationRef,
  isNetworkAuthenticationRef,
  isServiceAccountRef,
  refTargets,
} from "./ref_kind.ts";
import type { PolicyStore } from "./store.ts";

export const ALL_NETWORKS = ["0.0.0.0/0", "::/0"];

export function networks(specs: NetworkSpec[]): Network[] {
  return specs.map((n) => ({ net: parseNetwork(n.cidr), except: (n.except ?? []).map(parseNetwork) }));
}

function cidrs(list: string[]): Network[] {
  return list.map((cidr) => ({ net: toIpNetwork(cidr), except: [] }));
}

/** Mesh identities as the proxy matches them: exact names, and suffixes for `*` / `*.a.b`. */
export interface IdentityMatches {
  identities: Identity[];
  suffixes: IdentitySuffix[];
}

export function addIdentityText(out: IdentityMatches, text: string): void {
  if (text === "*") out.suffixes.push({ parts: [] });
  else if (text.startsWith("*.")) out.suffixes.push({ parts: text.slice(2).split(".") });
  else out.identities.push({ name: text });
}

/** The identity (or suffix) a ServiceAccount or Namespace reference stands for. */
export function addIdentityRef(
  out: IdentityMatches,
  ref: ObjectRef,
  defaultNs: string,
  cfg: PolicyConfig,
): void {
  const kind = ref.kind ?? "ServiceAccount";
  if (refTargets(ref, "", "Namespace")) {
    // Every ServiceAccount of the namespace.
    out.suffixes.push({
      parts: [
        ref.name,
        "serviceaccount",
        "identity",
        cfg.controlPlaneNamespace,
        ...cfg.identityTrustDomain.split("."),
      ],
    });
    return;
  }
  if (!refTargets(ref, "", "ServiceAccount", "ServiceAccount")) {
    throw new Error(`identityRefs kind "${kind}" is not ServiceAccount or Namespace`);
  }
  const ns = ref.namespace ?? defaultNs;
  if (ref.name === "*") {
    out.suffixes.push({
      parts: [
        ns,
        "serviceaccount",
        "identity",
        cfg.controlPlaneNamespace,
        ...cfg.identityTrustDomain.split("."),
      ],
    });
    return;
  }
  out.identities.push({
    name: formatWorkloadIdentity({
      serviceAccount: ref.name,
      namespace: ns,
      controlPlaneNamespace: cfg.controlPlaneNamespace,
      trustDomain: cfg.identityTrustDomain,
    }),
  });
}

function meshAuthn(ids: IdentityMatches): Authn {
  return { permit: { $case: "meshTLS", value: { clients: { $case: "identities", value: ids } } } };
}
const UNAUTHENTICATED: Authn = { permit: { $case: "unauthenticated", value: {} } };
const TLS_UNAUTHENTICATED: Authn = {
  permit: { $case: "meshTLS", value: { clients: { $case: "unauthenticated", value: {} } } },
};

function resourceAuthz(kind: string, name: string, nets: Network[], authn: Authn): Authz {
  const metadata: Metadata = {
    kind: {
      $case: "resource",
      value: { group: POLICY_GROUP, kind, name, namespace: "", section: "", port: 0 },
    },
  };
  return { networks: nets, authentication: authn, metadata, labels: { group: POLICY_GROUP, kind, name } };
}

export function defaultAuthz(name: string, nets: Network[], authn: Authn): Authz {
  return {
    networks: nets,
    authentication: authn,
    metadata: { kind: { $case: "default", value: name } },
    labels: { group: "", kind: "default", name },
  };
}

/** The authorizations a default policy grants (deny grants none). */
export function defaultPolicyAuthzs(policy: DefaultInboundPolicy, cfg: PolicyConfig): Authz[] {
  const any: IdentityMatches = { identities: [], suffixes: [{ parts: [] }] };
  switch (policy) {
    case "all-unauthenticated":
      return [defaultAuthz(policy, cidrs(ALL_NETWORKS), UNAUTHENTICATED)];
    case "cluster-unauthenticated":
      return [defaultAuthz(policy, cidrs(cfg.clusterNetworks), UNAUTHENTICATED)];
    case "all-authenticated":
      return [defaultAuthz(policy, cidrs(ALL_NETWORKS), meshAuthn(any))];
    case "cluster-authenticated":
      return [defaultAuthz(policy, cidrs(cfg.clusterNetworks), meshAuthn(any))];
    case "audit":
      // Allowed like all-unauthenticated; the name tells the proxy to flag it.
      return [defaultAuthz(policy, cidrs(ALL_NETWORKS), UNAUTHENTICATED)];
    case "deny":
      return [];
  }
}

export function probeAuthz(cfg: PolicyConfig): Authz {
  return defaultAuthz("probe", cidrs(cfg.probeNetworks), UNAUTHENTICATED);
}

/**
 * Resolves an AuthorizationPolicy against the authentications it requires. All of them must
 * hold, so one authz carries the identity requirement and the network requirement together.
 * Throws when a reference is missing or unsupported: the policy then authorizes nothing.
 */
export function authorizationPolicyAuthz(
  policy: AuthorizationPolicy,
  store: PolicyStore,
  cfg: PolicyConfig,
): Authz {
  const ns = policy.metadata.namespace ?? "";
  const refs = policy.spec?.requiredAuthenticationRefs ?? [];
  let ids: IdentityMatches | undefined;
  let nets: Network[] | undefined;
  for (const ref of refs) {
    const kind = ref.kind ?? "";
    const refNs = ref.namespace ?? ns;
    if (isMeshTlsAuthenticationRef(ref)) {
      const m = store.meshTlsAuthentication(refNs, ref.name);
      if (!m) throw new Error(`MeshTLSAuthentication ${refNs}/${ref.name} not found`);
      if (ids) throw new Error("more than one identity authentication is required");
      ids = meshTlsIdentities(m, cfg);
    } else if (isNetworkAuthenticationRef(ref)) {
      const n = store.networkAuthentication(refNs, ref.name);
      if (!n) throw new Error(`NetworkAuthentication ${refNs}/${ref.name} not found`);
      if (nets) throw new Error("more than one NetworkAuthentication is required");
      nets = networks(n.spec?.networks ?? []);
    } else if (isServiceAccountRef(ref)) {
      if (ids) throw new Error("more than one identity authentication is required");
      ids = { identities: [], suffixes: [] };
      addIdentityRef(ids, { kind: "ServiceAccount", name: ref.name, namespace: refNs }, ns, cfg);
    } else {
      throw new Error(`requiredAuthenticationRefs kind "${kind}" is not supported`);
    }
  }
  return resourceAuthz(
    "authorizationpolicy",
    policy.metadata.name,
    nets ?? cidrs(ALL_NETWORKS),
    ids ? meshAuthn(ids) : UNAUTHENTICATED,
  );
}

export function meshTlsIdentities(m: MeshTLSAuthentication, cfg: PolicyConfig): IdentityMatches {
  const out: IdentityMatches = { identities: [], suffixes: [] };
  for (const text of m.spec?.identities ?? []) addIdentityText(out, text);
  for (const ref of m.spec?.identityRefs ?? []) addIdentityRef(out, ref, m.metadata.namespace ?? "", cfg);
  return out;
}

/** A legacy ServerAuthorization; without networks it applies to the cluster networks. */
export function serverAuthorizationAuthz(saz: ServerAuthorization, cfg: PolicyConfig): Authz {
  const client = saz.spec?.client ?? {};
  const nets = client.networks?.length ? networks(client.networks) : cidrs(cfg.clusterNetworks);
  let authn: Authn;
  if (client.unauthenticated) authn = UNAUTHENTICATED;
  else if (client.meshTLS?.unauthenticatedTLS) authn = TLS_UNAUTHENTICATED;
  else {
    const ids: IdentityMatches = { identities: [], suffixes: [] };
    for (const text of client.meshTLS?.identities ?? []) addIdentityText(ids, text);
    for (const sa of client.meshTLS?.serviceAccounts ?? []) {
      addIdentityRef(ids, { kind: "ServiceAccount", ...sa }, saz.metadata.namespace ?? "", cfg);
    }
    authn = meshAuthn(ids);
  }
  return resourceAuthz("serverauthorization", saz.metadata.name, nets, authn);
}
