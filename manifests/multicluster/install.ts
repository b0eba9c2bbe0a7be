/**
 * What `weft multicluster install` puts into a cluster so other clusters can link to it (issue 23), named as
 * Linkerd's multicluster extension with weft's prefix:
 *
 *   - namespace `weft-multicluster`, annotated for injection (service mirrors run here too);
 *   - the remote-access ServiceAccount a linked cluster's service mirror uses, its token Secret and a
 *     read-only ClusterRole (Services, Endpoints, EndpointSlices, Pods, Namespaces, and the trust-roots
 *     ConfigMap by name, so `check` can compare anchors with the stored credentials alone);
 *   - with the gateway: Deployment `weft-gateway` (its proxy in gateway mode; the app container only idles),
 *     its ServiceAccount, a NodePort Service (4143 -> 30143 for mTLS, 4191 -> 30191 for the probe) and the
 *     inbound policy of port 4143: a Server, an AuthorizationPolicy and a MeshTLSAuthentication naming the
 *     identities allowed to use the gateway (default `*`, any identity of the trust domain).
 *
 * Pure: the objects only. The gateway's pod template carries `linkerd.io/inject: enabled` and a
 * `linkerd-proxy` entry with the gateway env; install renders the proxy in as deploy renders the control
 * plane's (manifests/render.ts), since the webhook has no switch for gateway mode.
 */
import {
  GATEWAY_NAME,
  MULTICLUSTER_NAMESPACE,
  multiclusterGatewayIdentity,
} from "../../proto/multicluster.ts";
import type { Manifest } from "../kinds.ts";
import { MANIFEST_IMAGE } from "../render.ts";

export const MC_NAMESPACE = MULTICLUSTER_NAMESPACE;
export const REMOTE_ACCESS_SA = "weft-service-mirror-remote-access";
export const REMOTE_ACCESS_TOKEN_SECRET = `${REMOTE_ACCESS_SA}-token`;
export { GATEWAY_NAME };
export const GATEWAY_PORT = 4143;
export const GATEWAY_NODE_PORT = 30143;
export const PROBE_PORT = 4191;
export const PROBE_NODE_PORT = 30191;
export const PROBE_PATH = "/ready";
export const PROBE_PERIOD = "3s";
/** The proxy's gateway switch (chosen by the proxy; proxy/main.ts reads it). */
export const GATEWAY_ENV = "WEFT_PROXY_INBOUND_GATEWAY";

/** Linkerd's annotations on the gateway Service, which `link` reads. */
export const GatewayAnnotations = {
  identity: "mirror.linkerd.io/gateway-identity",
  probePeriod: "mirror.linkerd.io/probe-period",
  probePath: "mirror.linkerd.io/probe-path",
  gateway: "mirror.linkerd.io/multicluster-gateway",
} as const;

const EXTENSION = { "linkerd.io/extension": "multicluster", "app.kubernetes.io/part-of": "weft" };

export interface InstallParams {
  gateway: boolean;
  /** MeshTLSAuthentication identities allowed through the gateway (`*` = any). */
  allowedIdentities: string[];
  controlPlaneNamespace: string;
  trustDomain: string;
}

/** `<sa>.<ns>.serviceaccount.identity.<control ns>.<trust domain>`: the gateway's mTLS identity. */
export function gatewayIdentity(trustDomain: string, controlPlaneNamespace = "weft"): string {
  return multiclusterGatewayIdentity(controlPlaneNamespace, trustDomain);
}

/** Parses --gateway-allowed-identities: comma-separated, none empty. */
export function parseIdentities(text: string): string[] {
  const ids = text.split(",").map((s) => s.trim());
  if (ids.some((s) => s === "")) throw new Error(`"${text}" has an empty identity`);
  return ids;
}

function meta(name: string, namespace?: string, extra: Record<string, string> = {}): Manifest["metadata"] {
  return { name, ...(namespace ? { namespace } : {}), labels: { ...EXTENSION, ...extra } };
}

export function remoteAccessObjects(trustRootsConfigMap: string): Manifest[] {
  const read = ["get", "list", "watch"];
  return [
    {
      apiVersion: "v1",
      kind: "ServiceAccount",
      metadata: meta(REMOTE_ACCESS_SA, MC_NAMESPACE),
    },
    {
      apiVersion: "v1",
      kind: "Secret",
      metadata: {
        ...meta(REMOTE_ACCESS_TOKEN_SECRET, MC_NAMESPACE),
        annotations: { "kubernetes.io/service-account.name": REMOTE_ACCESS_SA },
      },
      type: "kubernetes.io/service-account-token",
    },
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRole",
      metadata: meta(REMOTE_ACCESS_SA),
      rules: [
        { apiGroups: [""], resources: ["services", "endpoints", "pods", "namespaces"], verbs: read },
        { apiGroups: ["discovery.k8s.io"], resources: ["endpointslices"], verbs: read },
        { apiGroups: [""], resources: ["configmaps"], resourceNames: [trustRootsConfigMap], verbs: ["get"] },
      ],
    },
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRoleBinding",
      metadata: meta(REMOTE_ACCESS_SA),
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: REMOTE_ACCESS_SA },
      subjects: [{ kind: "ServiceAccount", name: REMOTE_ACCESS_SA, namespace: MC_NAMESPACE }],
    },
  ];
}

export function gatewayObjects(p: InstallParams): Manifest[] {
  const app = { app: GATEWAY_NAME };
  const policyRef = (kind: string, name: string) => ({ group: "policy.linkerd.io", kind, name });
  return [
    { apiVersion: "v1", kind: "ServiceAccount", metadata: meta(GATEWAY_NAME, MC_NAMESPACE) },
    {
      apiVersion: "v1",
      kind: "Service",
      metadata: {
        ...meta(GATEWAY_NAME, MC_NAMESPACE),
        annotations: {
          [GatewayAnnotations.identity]: gatewayIdentity(p.trustDomain, p.controlPlaneNamespace),
          [GatewayAnnotations.probePeriod]: PROBE_PERIOD.replace(/s$/, ""),
          [GatewayAnnotations.probePath]: PROBE_PATH,
          [GatewayAnnotations.gateway]: "true",
        },
      },
      spec: {
        type: "NodePort",
        selector: app,
        ports: [
          { name: "mc-gateway", port: GATEWAY_PORT, targetPort: GATEWAY_PORT, nodePort: GATEWAY_NODE_PORT },
          { name: "mc-probe", port: PROBE_PORT, targetPort: PROBE_PORT, nodePort: PROBE_NODE_PORT },
        ].map((x) => ({ ...x, protocol: "TCP" })),
      },
    },
    {
      apiVersion: "policy.linkerd.io/v1alpha1",
      kind: "MeshTLSAuthentication",
      metadata: meta(GATEWAY_NAME, MC_NAMESPACE),
      spec: { identities: p.allowedIdentities },
    },
    {
      apiVersion: "policy.linkerd.io/v1alpha1",
      kind: "AuthorizationPolicy",
      metadata: meta(GATEWAY_NAME, MC_NAMESPACE),
      spec: {
        targetRef: policyRef("Server", GATEWAY_NAME),
        requiredAuthenticationRefs: [{
          ...policyRef("MeshTLSAuthentication", GATEWAY_NAME),
          namespace: MC_NAMESPACE,
        }],
      },
    },
    {
      apiVersion: "policy.linkerd.io/v1beta3",
      kind: "Server",
      metadata: meta(GATEWAY_NAME, MC_NAMESPACE),
      spec: { podSelector: { matchLabels: app }, port: GATEWAY_PORT },
    },
    {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: meta(GATEWAY_NAME, MC_NAMESPACE, app),
      spec: {
        replicas: 1,
        selector: { matchLabels: app },
        template: {
          metadata: {
            labels: { ...EXTENSION, ...app },
            annotations: {
              "linkerd.io/inject": "enabled",
              // Linkerd's switch, for tools that look for it; weft's proxy reads the env below.
              "config.linkerd.io/enable-gateway": "true",
            },
          },
          spec: {
            serviceAccountName: GATEWAY_NAME,
            containers: [
              {
                // Only the proxy works; this keeps the pod alive (the weft image has no pause binary).
                name: "idle",
                image: MANIFEST_IMAGE,
                command: ["weft-await", "sleep", "2147483"],
                resources: { requests: { cpu: "1m", memory: "16Mi" } },
              },
              { name: "linkerd-proxy", env: [{ name: GATEWAY_ENV, value: "true" }] },
            ],
          },
        },
      },
    },
  ];
}

/** Every object of an install, before the gateway's proxy is rendered in (see the module comment). */
export function installObjects(p: InstallParams, trustRootsConfigMap: string): Manifest[] {
  const ns: Manifest = {
    apiVersion: "v1",
    kind: "Namespace",
    metadata: { ...meta(MC_NAMESPACE), annotations: { "linkerd.io/inject": "enabled" } },
  };
  return [ns, ...remoteAccessObjects(trustRootsConfigMap), ...(p.gateway ? gatewayObjects(p) : [])];
}
