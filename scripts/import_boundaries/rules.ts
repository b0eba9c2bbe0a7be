/**
 * Which code may import which: the table `scripts/check_imports.ts` enforces. Paths are relative to
 * the repository root; a pattern ending in `/` is a folder, `""` is every file, anything else one file.
 */
import type { ImportRule, PathPattern } from "./engine.ts";

/** Not walked: the pinned code generators and their node_modules. */
export const NOT_CHECKED: readonly string[] = ["tools/"];

/**
 * Files outside `proto/` that import generated code today: allowlists to shrink as each one moves to the
 * contract modules in `proto/` (or, in the proxy, to its own types converted once at the discovery edge).
 * `proto/gen/` (with grpc-js services) is the control plane's, `proto/gen_messages/` (messages only) the proxy's.
 */
const GEN_IMPORTERS: readonly string[] = [
  "control/destination/bench/client.ts",
  "control/destination/destination_cluster_test.ts",
  "control/destination/destination_test.ts",
  "control/destination/endpoint_index_test.ts",
  "control/destination/endpoints.ts",
  "control/destination/frame.ts",
  "control/destination/frame_test.ts",
  "control/destination/profile_index.ts",
  "control/destination/profile_translate.ts",
  "control/destination/server.ts",
  "control/destination/testing.ts",
  "control/grpc/server_limits_test.ts",
  "control/grpc/server_metrics_test.ts",
  "control/identity/bench/main.ts",
  "control/identity/certify_flood.ts",
  "control/identity/certify_scenario.ts",
  "control/identity/certify_table_test.ts",
  "control/identity/grpc_server.ts",
  "control/identity/identity_cluster_test.ts",
  "control/identity/issuer_rotation_test.ts",
  "control/identity/service.ts",
  "control/policy/authz.ts",
  "control/policy/bench/scenario.ts",
  "control/policy/duration.ts",
  "control/policy/egress_index.ts",
  "control/policy/egress_index_test.ts",
  "control/policy/examples_test.ts",
  "control/policy/grpc_server.ts",
  "control/policy/network_cidr.ts",
  "control/policy/grpc_server_test.ts",
  "control/policy/inbound_index.ts",
  "control/policy/inbound_index_test.ts",
  "control/policy/outbound_annotations.ts",
  "control/policy/outbound_index.ts",
  "control/policy/outbound_index_test.ts",
  "control/policy/policy_cluster_test.ts",
  "control/policy/ratelimit.ts",
  "control/policy/route_convert.ts",
  "control/policy/test_server.ts",
  "control/policy/watch_hub.ts",
  "control/policy/watch_hub_test.ts",
  "proxy/discovery/control_client_test.ts",
  "proxy/identity/certify_client_test.ts",
  "proxy/testing/control_plane.ts",
];
const GEN_MESSAGES_IMPORTERS: readonly string[] = [
  "proxy/balance/bench.ts",
  "proxy/balance/config.ts",
  "proxy/bench/main.ts",
  "proxy/core/duration.ts",
  "proxy/grpc/client_test.ts",
  "proxy/grpc/hostile_test.ts",
  "proxy/hostile_policy_test.ts",
  "proxy/route/retry/budget.ts",
  "proxy/route/retry/policy.ts",
  "proxy/route/retry/timeouts.ts",
  "proxy/http_data_path_test.ts",
  "proxy/identity/certify_client.ts",
  "proxy/identity/verify_response.ts",
  "proxy/identity/verify_response_test.ts",
  "proxy/inbound/authorize.ts",
  "proxy/inbound/authorize_test.ts",
  "proxy/inbound/http/access_log_test.ts",
  "proxy/inbound/http/authorize.ts",
  "proxy/inbound/http/authorize_test.ts",
  "proxy/inbound/http/stack_test.ts",
  "proxy/inbound/inbound.ts",
  "proxy/outbound/http/endpoint.ts",
  "proxy/outbound/resolve_test.ts",
  "proxy/route/filters.ts",
  "proxy/route/filters_test.ts",
  "proxy/route/grpc_match.ts",
  "proxy/route/http_match.ts",
  "proxy/route/http_match_test.ts",
  "proxy/route/l4.ts",
  "proxy/route/l4_test.ts",
  "proxy/route/local_rate_limit.ts",
  "proxy/route/meta.ts",
  "proxy/route/method.ts",
  "proxy/route/outbound.ts",
  "proxy/route/outbound_test.ts",
  "proxy/route/profile.ts",
  "proxy/route/profile_test.ts",
  "proxy/route/testing.ts",
  "proxy/testing/hostile_world.ts",
  "proxy/testing/inbound_servers.ts",

  // The discovery edge, where the proxy converts messages into its own types.
  "proxy/discovery/",
  "proxy/core/endpoint.ts",
];

/**
 * The proxy's layers, lowest first: a folder imports only from folders below it (and its own), so
 * the request path reads bottom-up and nothing reaches back into a stack from beneath it.
 * `inbound/` and `outbound/` share a layer and never import each other.
 */
export const PROXY_LAYERS: readonly (readonly string[])[] = [
  ["proxy/config/"],
  ["proxy/core/"],
  ["proxy/transport/"],
  ["proxy/http/"],
  ["proxy/metrics/"],
  ["proxy/balance/"],
  ["proxy/route/"],
  ["proxy/grpc/"],
  // Tap: the registry the stacks check per request, and its server on the control port.
  ["proxy/tap/"],
  ["proxy/identity/"],
  ["proxy/discovery/"],
  ["proxy/inbound/", "proxy/outbound/"],
  ["proxy/admin/"],
  // The process: proxy/main.ts, run.ts and the identity seam wire the layers together.
  ["proxy/main.ts", "proxy/run.ts", "proxy/identity_seam.ts"],
];

/** Known upward imports, each with why; meant to shrink. */
const PROXY_LAYER_EXCEPTIONS: readonly PathPattern[] = [
  // Discovery compiles inbound Server messages with the inbound side's policy compilers.
  "proxy/discovery/clients.ts",
];

function inLayer(path: PathPattern, layer: readonly string[]): boolean {
  return layer.some((l) => l.endsWith("/") ? path.startsWith(l) : path === l);
}

function proxyLayerRules(): ImportRule[] {
  const rules: ImportRule[] = [];
  const test = ["proxy/testing/", "proxy/bench/"];
  PROXY_LAYERS.forEach((layer, i) => {
    const above = PROXY_LAYERS.slice(i + 1).flat();
    rules.push({
      name: `proxy layers: ${layer.join(" ")} import(s) nothing above (${
        above.join(" ") || "-"
      }) nor test code`,
      files: layer,
      forbid: [...above, ...test],
      allow: PROXY_LAYER_EXCEPTIONS.filter((f) => inLayer(f, layer)),
      productCodeOnly: true,
    });
  });
  rules.push(
    {
      name: "proxy layers: inbound/ does not import outbound/",
      files: ["proxy/inbound/"],
      forbid: ["proxy/outbound/"],
    },
    {
      name: "proxy layers: outbound/ does not import inbound/",
      files: ["proxy/outbound/"],
      forbid: ["proxy/inbound/"],
    },
  );
  return rules;
}

export const IMPORT_RULES: readonly ImportRule[] = [
  {
    name: "proto/ imports no project code",
    files: ["proto/"],
    forbid: ["control/", "proxy/", "init/", "manifests/", "tests/", "images/", "scripts/", "cli/"],
  },
  { name: "control/ never imports proxy/", files: ["control/"], forbid: ["proxy/"] },
  { name: "proxy/ never imports control/", files: ["proxy/"], forbid: ["control/"] },
  { name: "init/ imports neither control/ nor proxy/", files: ["init/"], forbid: ["control/", "proxy/"] },
  {
    // The CLI sits on top: it reaches the parts it drives, none of them reaches back into it (tests may drive it).
    name: "only cli/ imports cli/",
    files: ["control/", "proxy/", "init/", "manifests/", "proto/", "images/", "scripts/"],
    forbid: ["cli/"],
    // The dashboard shows what the CLI's views compute, through the same queries (issue 17).
    allow: ["control/dashboard/"],
  },
  {
    name: "cli/ product code imports no test code",
    files: ["cli/"],
    forbid: ["tests/", "proxy/testing/", "control/policy/test_server.ts"],
    productCodeOnly: true,
  },
  {
    name: "generated code (proto/gen/) is imported only through the contract modules in proto/",
    files: [""],
    forbid: ["proto/gen/"],
    allow: ["proto/", ...GEN_IMPORTERS],
  },
  {
    name: "generated code (proto/gen_messages/) is imported only through the contract modules in proto/",
    files: [""],
    forbid: ["proto/gen_messages/"],
    allow: ["proto/", ...GEN_MESSAGES_IMPORTERS],
  },
  ...proxyLayerRules(),
];
