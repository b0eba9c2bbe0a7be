/**
 * Writes the CRD manifests in this folder: `deno run -A manifests/crds/policy/gen.ts`.
 * The schemas are built from shared parts here so every version and kind states a field the
 * same way; the YAML next to this file is the output, checked in, and applied as is.
 */
import { stringify } from "yaml";
import { DEFAULT_INBOUND_POLICIES } from "../../../proto/env.ts";
import { SERVER_PROXY_PROTOCOLS } from "../../../control/policy/resources.ts";
import { rateLimitCrd } from "./ratelimit_crd.ts";
import { egressCrds } from "./egress_crds.ts";
import { externalWorkloadCrd } from "./external_workload_crd.ts";
import { policyHttpRouteVersionSpecs, serverVersionSpecs } from "./version_schemas.ts";
import { withSessionPersistence } from "./session_persistence.ts";

type Schema = Record<string, unknown>;
const str = (extra: Schema = {}): Schema => ({ type: "string", ...extra });
const int = (extra: Schema = {}): Schema => ({ type: "integer", ...extra });
const arr = (items: Schema, extra: Schema = {}): Schema => ({ type: "array", items, ...extra });
const obj = (properties: Record<string, Schema>, extra: Schema = {}): Schema => ({
  type: "object",
  properties,
  ...extra,
});
const intOrString = (extra: Schema = {}): Schema => ({ "x-kubernetes-int-or-string": true, ...extra });

const NAME = str({ minLength: 1, maxLength: 253 });
const CIDR_NETWORK = obj({
  cidr: str({ description: "An IPv4 or IPv6 network, e.g. 10.0.0.0/8." }),
  except: arr(str()),
}, {
  required: ["cidr"],
});
const labelSelector = (description: string): Schema =>
  obj({
    matchLabels: { type: "object", additionalProperties: str() },
    matchExpressions: arr(
      obj({
        key: str(),
        operator: str({ enum: ["In", "NotIn", "Exists", "DoesNotExist"] }),
        values: arr(str()),
      }, {
        required: ["key", "operator"],
      }),
    ),
  }, { description });
const DEFAULT_POLICIES = [...DEFAULT_INBOUND_POLICIES];

const serverSpec = obj({
  podSelector: labelSelector("Selects the pods in this namespace that the Server applies to."),
  externalWorkloadSelector: labelSelector("Selects ExternalWorkloads instead of pods."),
  port: intOrString({ description: "A port number, or the name of a container port, of the selected pods." }),
  proxyProtocol: str({ enum: [...SERVER_PROXY_PROTOCOLS], default: "unknown" }),
  accessPolicy: str({
    enum: DEFAULT_POLICIES,
    default: "deny",
    description: "Policy for traffic no authorization allows.",
  }),
}, {
  required: ["port"],
  oneOf: [{ required: ["podSelector"] }, { required: ["externalWorkloadSelector"] }],
});

const serverAuthorizationSpec = obj({
  server: obj({ name: str(), selector: labelSelector("Selects Servers by their labels.") }, {
    oneOf: [{ required: ["name"] }, { required: ["selector"] }],
  }),
  client: obj({
    networks: arr(CIDR_NETWORK),
    unauthenticated: { type: "boolean" },
    meshTLS: obj({
      unauthenticatedTLS: { type: "boolean" },
      identities: arr(str()),
      serviceAccounts: arr(obj({ name: str(), namespace: str() }, { required: ["name"] })),
    }),
    // anyOf, not oneOf: Linkerd admits `unauthenticated: false` next to meshTLS; the webhook
    // refuses `unauthenticated: true` with meshTLS.
  }, { anyOf: [{ required: ["unauthenticated"] }, { required: ["meshTLS"] }] }),
}, { required: ["server", "client"] });

const targetRef = obj({ group: str(), kind: str(), name: NAME, namespace: str() }, {
  required: ["kind", "name"],
});
const authorizationPolicySpec = obj({
  targetRef,
  requiredAuthenticationRefs: arr(
    obj({ group: str(), kind: str(), name: NAME, namespace: str() }, { required: ["kind", "name"] }),
  ),
}, { required: ["targetRef", "requiredAuthenticationRefs"] });

const meshTlsSpec = obj({
  identities: arr(str(), { minItems: 1 }),
  identityRefs: arr(
    obj({ group: str(), kind: str(), name: NAME, namespace: str() }, { required: ["kind"] }),
    { minItems: 1 },
  ),
}, { oneOf: [{ required: ["identities"] }, { required: ["identityRefs"] }] });

const networkAuthSpec = obj({ networks: arr(CIDR_NETWORK, { minItems: 1 }) }, { required: ["networks"] });

// --- routes ---
const parentRef = obj({
  group: str(),
  kind: str(),
  namespace: str(),
  name: NAME,
  sectionName: str(),
  port: int({ minimum: 1, maximum: 65535 }),
}, { required: ["name"] });
const headerMatch = obj({
  type: str({ enum: ["Exact", "RegularExpression"], default: "Exact" }),
  name: str({ minLength: 1 }),
  value: str(),
}, {
  required: ["name", "value"],
});
const header = obj({ name: str({ minLength: 1 }), value: str() }, { required: ["name", "value"] });
const headerModifier = obj({ set: arr(header), add: arr(header), remove: arr(str()) });
const httpFilter = obj({
  type: str({
    enum: [
      "RequestHeaderModifier",
      "ResponseHeaderModifier",
      "RequestRedirect",
      "RequestMirror",
      "URLRewrite",
      "ExtensionRef",
    ],
  }),
  requestHeaderModifier: headerModifier,
  responseHeaderModifier: headerModifier,
  requestRedirect: obj({
    scheme: str({ enum: ["http", "https"] }),
    hostname: str(),
    path: obj({
      type: str({ enum: ["ReplaceFullPath", "ReplacePrefixMatch"] }),
      replaceFullPath: str(),
      replacePrefixMatch: str(),
    }, {
      required: ["type"],
    }),
    port: int({ minimum: 1, maximum: 65535 }),
    statusCode: int({ enum: [301, 302], default: 302 }),
  }),
}, { required: ["type"], "x-kubernetes-preserve-unknown-fields": true });
const grpcFilter = obj({
  type: str({ enum: ["RequestHeaderModifier", "ResponseHeaderModifier", "RequestMirror", "ExtensionRef"] }),
  requestHeaderModifier: headerModifier,
  responseHeaderModifier: headerModifier,
}, { required: ["type"], "x-kubernetes-preserve-unknown-fields": true });
const backendRef = (filter: Schema) =>
  obj({
    group: str(),
    kind: str(),
    name: NAME,
    namespace: str(),
    port: int({ minimum: 1, maximum: 65535 }),
    weight: int({ minimum: 0, maximum: 1000000, default: 1 }),
    filters: arr(filter),
  }, { required: ["name"] });
const httpMatch = obj({
  path: obj({
    type: str({ enum: ["Exact", "PathPrefix", "RegularExpression"], default: "PathPrefix" }),
    value: str({ default: "/" }),
  }),
  headers: arr(headerMatch),
  queryParams: arr(headerMatch),
  method: str({ enum: ["GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"] }),
});
const routeStatus = obj({
  parents: arr(obj({
    parentRef,
    controllerName: str(),
    conditions: arr(obj({
      type: str(),
      status: str({ enum: ["True", "False", "Unknown"] }),
      reason: str(),
      message: str(),
      lastTransitionTime: str({ format: "date-time" }),
      observedGeneration: int({ format: "int64" }),
    }, { required: ["type", "status", "reason", "message", "lastTransitionTime"] })),
  }, { required: ["parentRef", "controllerName"] })),
});
const httpRouteSpec = (withTimeouts: boolean) =>
  obj({
    parentRefs: arr(parentRef, { maxItems: 32 }),
    hostnames: arr(str({ maxLength: 253 })),
    rules: arr(obj({
      name: str(),
      matches: arr(httpMatch, { maxItems: 64 }),
      filters: arr(httpFilter, { maxItems: 16 }),
      backendRefs: arr(backendRef(httpFilter)),
      ...(withTimeouts ? { timeouts: obj({ request: str(), backendRequest: str() }) } : {}),
    })),
  });
const grpcRouteSpec = obj({
  parentRefs: arr(parentRef, { maxItems: 32 }),
  hostnames: arr(str({ maxLength: 253 })),
  rules: arr(obj({
    name: str(),
    matches: arr(obj({
      method: obj({
        type: str({ enum: ["Exact", "RegularExpression"], default: "Exact" }),
        service: str(),
        method: str(),
      }),
      headers: arr(headerMatch),
    })),
    filters: arr(grpcFilter),
    backendRefs: arr(backendRef(grpcFilter)),
  })),
});

interface Crd {
  file: string;
  group: string;
  kind: string;
  plural: string;
  singular: string;
  shortNames?: string[];
  versions: string[];
  storage: string;
  spec: Schema;
  /** A version's own spec schema, where it differs from `spec` (see version_schemas.ts). */
  versionSpecs?: Record<string, Schema>;
  status?: Schema;
  gateway?: boolean;
  printer?: { name: string; type: string; jsonPath: string }[];
}

function crd(c: Crd): Schema {
  const labels: Record<string, string> = {
    "app.kubernetes.io/managed-by": "weft",
    "app.kubernetes.io/part-of": "weft",
  };
  if (!c.gateway) labels["linkerd.io/control-plane-ns"] = "weft";
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: {
      name: `${c.plural}.${c.group}`,
      labels,
      annotations: c.gateway
        ? {
          "weft.io/install-policy": "only-when-absent",
          // The API server requires this on *.k8s.io groups; "unapproved" says honestly that
          // this copy of the schema is weft's, not the Gateway API project's own release.
          "api-approved.kubernetes.io": "unapproved, schema written by weft for clusters without Gateway API",
        }
        : undefined,
    },
    spec: {
      group: c.group,
      scope: "Namespaced",
      names: {
        kind: c.kind,
        plural: c.plural,
        singular: c.singular,
        listKind: `${c.kind}List`,
        shortNames: c.shortNames,
      },
      versions: c.versions.map((name) => ({
        name,
        served: true,
        storage: name === c.storage,
        subresources: c.status ? { status: {} } : undefined,
        additionalPrinterColumns: c.printer,
        schema: {
          openAPIV3Schema: obj({
            apiVersion: str(),
            kind: str(),
            metadata: { type: "object" },
            spec: c.versionSpecs?.[name] ?? c.spec,
            ...(c.status ? { status: c.status } : {}),
          }, { required: ["spec"] }),
        },
      })),
    },
  };
}

const POLICY = "policy.linkerd.io";
const GATEWAY = "gateway.networking.k8s.io";
const age = { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" };
const crds: Crd[] = [
  {
    file: "server.yaml",
    group: POLICY,
    kind: "Server",
    plural: "servers",
    singular: "server",
    shortNames: ["srv"],
    versions: ["v1alpha1", "v1beta1", "v1beta2", "v1beta3"],
    storage: "v1beta3",
    spec: serverSpec,
    versionSpecs: serverVersionSpecs(serverSpec),
    printer: [{ name: "Port", type: "string", jsonPath: ".spec.port" }, {
      name: "Protocol",
      type: "string",
      jsonPath: ".spec.proxyProtocol",
    }, age],
  },
  {
    file: "serverauthorization.yaml",
    group: POLICY,
    kind: "ServerAuthorization",
    plural: "serverauthorizations",
    singular: "serverauthorization",
    shortNames: ["saz", "serverauthz", "srvauthz"],
    versions: ["v1alpha1", "v1beta1"],
    storage: "v1beta1",
    spec: serverAuthorizationSpec,
  },
  {
    file: "authorizationpolicy.yaml",
    group: POLICY,
    kind: "AuthorizationPolicy",
    plural: "authorizationpolicies",
    singular: "authorizationpolicy",
    shortNames: ["authzpolicy"],
    versions: ["v1alpha1"],
    storage: "v1alpha1",
    spec: authorizationPolicySpec,
  },
  {
    file: "meshtlsauthentication.yaml",
    group: POLICY,
    kind: "MeshTLSAuthentication",
    plural: "meshtlsauthentications",
    singular: "meshtlsauthentication",
    shortNames: ["meshtlsauthn"],
    versions: ["v1alpha1"],
    storage: "v1alpha1",
    spec: meshTlsSpec,
  },
  {
    file: "networkauthentication.yaml",
    group: POLICY,
    kind: "NetworkAuthentication",
    plural: "networkauthentications",
    singular: "networkauthentication",
    shortNames: ["netauthn", "networkauthn"],
    versions: ["v1alpha1"],
    storage: "v1alpha1",
    spec: networkAuthSpec,
  },
  {
    file: "httproute.yaml",
    group: POLICY,
    kind: "HTTPRoute",
    plural: "httproutes",
    singular: "httproute",
    versions: ["v1alpha1", "v1beta1", "v1beta2", "v1beta3"],
    storage: "v1beta3",
    spec: httpRouteSpec(true),
    versionSpecs: policyHttpRouteVersionSpecs(httpRouteSpec(true), httpRouteSpec(false)),
    status: routeStatus,
  },
  {
    file: "gateway-httproute.yaml",
    group: GATEWAY,
    kind: "HTTPRoute",
    plural: "httproutes",
    singular: "httproute",
    versions: ["v1beta1", "v1"],
    storage: "v1",
    spec: withSessionPersistence(httpRouteSpec(true)),
    status: routeStatus,
    gateway: true,
  },
  {
    file: "gateway-grpcroute.yaml",
    group: GATEWAY,
    kind: "GRPCRoute",
    plural: "grpcroutes",
    singular: "grpcroute",
    versions: ["v1alpha2", "v1"],
    storage: "v1",
    spec: withSessionPersistence(grpcRouteSpec),
    status: routeStatus,
    gateway: true,
  },
];

crds.push(...egressCrds({ parentRef, routeStatus, network: CIDR_NETWORK }));

crds.push(rateLimitCrd());

const dir = new URL(".", import.meta.url).pathname;
const banner = "# Generated by manifests/crds/policy/gen.ts; edit that file, not this one.\n";
for (const c of crds) {
  // JSON round trip drops the undefined fields before YAML sees them.
  await Deno.writeTextFile(
    `${dir}${c.file}`,
    banner + stringify(JSON.parse(JSON.stringify(crd(c))), { lineWidth: 0 }),
  );
}
// ExternalWorkload's versions differ in field names, so it comes as a whole manifest.
const ew = externalWorkloadCrd();
await Deno.writeTextFile(
  `${dir}${ew.file}`,
  banner + stringify(JSON.parse(JSON.stringify(ew.manifest)), { lineWidth: 0 }),
);
console.log(`wrote ${crds.length + 1} CRDs to ${dir}`);
