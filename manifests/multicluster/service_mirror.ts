/**
 * The objects of one link's service mirror in the source cluster (issue 23), pure: ServiceAccount,
 * a ClusterRole to write mirror Services and Endpoints in every namespace (and read namespaces), a
 * Role to read Links and the credentials Secret in weft-multicluster, and Deployment
 * `weft-service-mirror-<target>` running `weft-control service_mirror --link=<link>`
 * (control/multicluster). RBAC as Linkerd's service mirror chart grants, without namespace creation
 * (mirrors only land in namespaces that exist) and without leases (one replica, Recreate).
 */
import { SERVICE_MIRROR_ADMIN_PORT } from "../../control/multicluster/config.ts";
import { Labels, LINK_GROUP, MULTICLUSTER_NAMESPACE } from "../../control/multicluster/link.ts";
import type { Manifest } from "../kinds.ts";
import { MANIFEST_IMAGE, type PullPolicy } from "../render.ts";

export interface ServiceMirrorParams {
  targetClusterName: string;
  /** The Link object's name; Linkerd names it after the target cluster (the default). */
  linkName?: string;
  image?: string;
  imagePullPolicy?: PullPolicy;
  namespace?: string;
}

const RBAC = "rbac.authorization.k8s.io/v1";
const COMPONENT = "service-mirror";

export function serviceMirrorName(targetClusterName: string): string {
  return `weft-service-mirror-${targetClusterName}`;
}

/** Every object of the link's service mirror, in apply order (unlink deletes the same list). */
export function serviceMirrorObjects(p: ServiceMirrorParams): Manifest[] {
  const ns = p.namespace ?? MULTICLUSTER_NAMESPACE;
  const target = p.targetClusterName;
  const link = p.linkName ?? target;
  const name = serviceMirrorName(target);
  const labels = {
    "app.kubernetes.io/part-of": "weft",
    "linkerd.io/extension": "multicluster",
    component: COMPONENT,
    [Labels.clusterName]: target,
  };
  const subjects = [{ kind: "ServiceAccount", name, namespace: ns }];
  const read = ["get", "list", "watch"];
  const localAccess = `${name}-access-local-resources`;
  const readLink = `${name}-read-link`;
  return [
    { apiVersion: "v1", kind: "ServiceAccount", metadata: { name, namespace: ns, labels } },
    {
      apiVersion: RBAC,
      kind: "ClusterRole",
      metadata: { name: localAccess, labels },
      rules: [
        {
          apiGroups: [""],
          resources: ["services", "endpoints"],
          verbs: [...read, "create", "update", "delete"],
        },
        { apiGroups: [""], resources: ["namespaces"], verbs: read },
      ],
    },
    {
      apiVersion: RBAC,
      kind: "ClusterRoleBinding",
      metadata: { name: localAccess, labels },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: localAccess },
      subjects,
    },
    {
      apiVersion: RBAC,
      kind: "Role",
      metadata: { name: readLink, namespace: ns, labels },
      rules: [
        { apiGroups: [LINK_GROUP], resources: ["links"], verbs: read },
        // Watched (credentials of type mirror.linkerd.io/remote-kubeconfig): new credentials restart the link.
        { apiGroups: [""], resources: ["secrets"], verbs: read },
      ],
    },
    {
      apiVersion: RBAC,
      kind: "RoleBinding",
      metadata: { name: readLink, namespace: ns, labels },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: readLink },
      subjects,
    },
    {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name, namespace: ns, labels },
      spec: {
        replicas: 1,
        // One writer per link: the old pod stops before the new one starts.
        strategy: { type: "Recreate" },
        selector: { matchLabels: { component: COMPONENT, [Labels.clusterName]: target } },
        template: {
          metadata: {
            labels,
            annotations: {
              "linkerd.io/inject": "enabled",
              // The API servers (this one and the target's) are reached directly, as the control plane does.
              "config.linkerd.io/skip-outbound-ports": "443,6443",
            },
          },
          spec: {
            serviceAccountName: name,
            securityContext: { seccompProfile: { type: "RuntimeDefault" } },
            containers: [{
              name: "service-mirror",
              image: p.image ?? MANIFEST_IMAGE,
              imagePullPolicy: p.imagePullPolicy ?? "Never",
              command: ["weft-control", "service_mirror", `--link=${link}`, `--namespace=${ns}`],
              env: [{ name: "DENO_V8_FLAGS", value: "--optimize-for-size" }],
              ports: [{ name: "admin-http", containerPort: SERVICE_MIRROR_ADMIN_PORT }],
              readinessProbe: {
                httpGet: { path: "/ready", port: SERVICE_MIRROR_ADMIN_PORT },
                periodSeconds: 5,
              },
              livenessProbe: {
                httpGet: { path: "/live", port: SERVICE_MIRROR_ADMIN_PORT },
                periodSeconds: 10,
                failureThreshold: 6,
              },
              resources: { requests: { cpu: "10m", memory: "64Mi" }, limits: { memory: "256Mi" } },
              securityContext: {
                runAsNonRoot: true,
                runAsUser: 2103,
                runAsGroup: 2103,
                allowPrivilegeEscalation: false,
                readOnlyRootFilesystem: true,
                capabilities: { drop: ["ALL"] },
              },
            }],
          },
        },
      },
    },
  ];
}
