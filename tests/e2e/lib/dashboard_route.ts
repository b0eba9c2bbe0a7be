/**
 * Routes for the dashboard's route pages to show: the demo has none, and adding some to weft-demo would change
 * what other tests see there, so the browser test makes its own meshed namespace with the demo's HTTP server
 * (`api`), a load client calling it at a bounded rate, a Gateway API HTTPRoute on the Service (outbound: the
 * client's proxy applies it) and one on a Server for `api`'s port (inbound) with an AuthorizationPolicy on that
 * route allowing the load client's identity, and deletes it afterwards.
 */
import { apply, type Json, kc, kubectl, WEFT_IMAGE } from "./kube.ts";
import { waitFor } from "./wait.ts";

export const ROUTE_NAME = "api-route";
export const ROUTE_SERVICE = "api";
/** The route's one match, as the route page prints it (route_view.ts). */
export const ROUTE_MATCH = "GET · PathPrefix /";
/** The inbound route, its Server and the AuthorizationPolicy that targets the route. */
export const INBOUND_ROUTE = "api-inbound";
export const INBOUND_SERVER = "api-http";
export const INBOUND_AUTHZ = "api-from-load";

export interface RouteFixture {
  namespace: string;
  /** The route page's path. */
  page: string;
  /** The inbound route's page, as the workload page's policy table links it. */
  inboundPage: string;
  close(): Promise<void>;
}

function deployment(name: string, script: string, env: Record<string, string>, port: number): Json {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name, labels: { app: name } },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: {
          serviceAccountName: name,
          terminationGracePeriodSeconds: 5,
          containers: [{
            name: "app",
            image: WEFT_IMAGE,
            imagePullPolicy: "Never",
            command: ["deno", "run", "-A", "--cached-only", script],
            env: [
              ...Object.entries(env).map(([k, value]) => ({ name: k, value })),
              { name: "POD_NAME", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } },
            ],
            ports: [{ name: "http", containerPort: port }],
            resources: { requests: { cpu: "10m", memory: "48Mi" }, limits: { memory: "256Mi" } },
          }],
        },
      },
    },
  };
}

/** Creates the namespace and its objects; `close` deletes the namespace (without waiting). */
export async function startRouteFixture(): Promise<RouteFixture> {
  const namespace = `e2e-dash-route-${crypto.randomUUID().slice(0, 6)}`;
  await kc(["apply", "-f", "-"], {
    stdin: JSON.stringify({
      apiVersion: "v1",
      kind: "Namespace",
      metadata: {
        name: namespace,
        labels: { "weft.io/e2e": "true" },
        annotations: { "linkerd.io/inject": "enabled" },
      },
    }),
  });
  const close = async () => {
    await kubectl(["delete", "namespace", namespace, "--wait=false"], { timeoutMs: 15_000 });
  };
  try {
    await waitFor(
      `ServiceAccount default in ${namespace}`,
      async () => (await kubectl(["-n", namespace, "get", "serviceaccount", "default"])).code === 0,
      { timeoutMs: 30_000 },
    );
    const items: Json[] = [
      { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: ROUTE_SERVICE } },
      { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "api-load" } },
      {
        apiVersion: "v1",
        kind: "Service",
        metadata: { name: ROUTE_SERVICE },
        spec: { selector: { app: ROUTE_SERVICE }, ports: [{ name: "http", port: 8080, targetPort: "http" }] },
      },
      deployment(ROUTE_SERVICE, "tests/demo/apps/http_service.ts", { ROLE: "api", PORT: "8080" }, 8080),
      deployment("api-load", "tests/demo/apps/load.ts", {
        MODE: "http",
        TARGET: `http://${ROUTE_SERVICE}:8080/`,
        RATE: "5",
        MAX_IN_FLIGHT: "10",
        METRICS_PORT: "9990",
      }, 9990),
      {
        apiVersion: "gateway.networking.k8s.io/v1",
        kind: "HTTPRoute",
        metadata: { name: ROUTE_NAME },
        spec: {
          parentRefs: [{ group: "core", kind: "Service", name: ROUTE_SERVICE, port: 8080 }],
          rules: [{
            matches: [{ method: "GET", path: { type: "PathPrefix", value: "/" } }],
            backendRefs: [{ name: ROUTE_SERVICE, port: 8080 }],
          }],
        },
      },
      {
        apiVersion: "policy.linkerd.io/v1beta3",
        kind: "Server",
        metadata: { name: INBOUND_SERVER },
        spec: { podSelector: { matchLabels: { app: ROUTE_SERVICE } }, port: "http", proxyProtocol: "HTTP/1" },
      },
      {
        apiVersion: "gateway.networking.k8s.io/v1",
        kind: "HTTPRoute",
        metadata: { name: INBOUND_ROUTE },
        spec: {
          parentRefs: [{ group: "policy.linkerd.io", kind: "Server", name: INBOUND_SERVER }],
          rules: [{ matches: [{ path: { type: "PathPrefix", value: "/" } }] }],
        },
      },
      {
        apiVersion: "policy.linkerd.io/v1alpha1",
        kind: "MeshTLSAuthentication",
        metadata: { name: "api-load" },
        spec: { identityRefs: [{ kind: "ServiceAccount", name: "api-load" }] },
      },
      {
        // The pods have no readiness probe: nothing but the load client needs to reach the Server's port.
        apiVersion: "policy.linkerd.io/v1alpha1",
        kind: "AuthorizationPolicy",
        metadata: { name: INBOUND_AUTHZ },
        spec: {
          targetRef: { group: "gateway.networking.k8s.io", kind: "HTTPRoute", name: INBOUND_ROUTE },
          requiredAuthenticationRefs: [{
            group: "policy.linkerd.io",
            kind: "MeshTLSAuthentication",
            name: "api-load",
          }],
        },
      },
    ];
    await apply(namespace, JSON.stringify({ apiVersion: "v1", kind: "List", items }));
  } catch (e) {
    await close();
    throw e;
  }
  return {
    namespace,
    page: `/namespaces/${namespace}/httproutes/${ROUTE_NAME}`,
    inboundPage: `/namespaces/${namespace}/httproutes/${INBOUND_ROUTE}?group=gateway.networking.k8s.io`,
    close,
  };
}
