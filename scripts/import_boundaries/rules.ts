/**
 * Which code may import which: the table `scripts/check_imports.ts` enforces. Paths are relative to
 * the repository root; a pattern ending in `/` is a folder, `""` is every file, anything else one file.
 */
import type { ImportRule } from "./engine.ts";

/** Not walked: the pinned code generators and their node_modules. */
export const NOT_CHECKED: readonly string[] = ["tools/"];

/**
 * Files outside `proto/` that import generated code today: allowlists to shrink as each one moves to the
 * contract modules in `proto/` (or, in the proxy, to its own types converted once at the discovery edge).
 * `proto/gen/` (with grpc-js services) is the control plane's, `proto/gen_messages/` (messages only) the proxy's.
 */
const GEN_IMPORTERS: readonly string[] = [
  "control/destination/bench/main.ts",
  "control/destination/destination_cluster_test.ts",
  "control/destination/destination_test.ts",
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
  "control/policy/bench/main.ts",
  "control/policy/duration.ts",
  "control/policy/examples_test.ts",
  "control/policy/grpc_server.ts",
  "control/policy/grpc_server_test.ts",
  "control/policy/inbound_index.ts",
  "control/policy/inbound_index_test.ts",
  "control/policy/outbound_annotations.ts",
  "control/policy/outbound_index.ts",
  "control/policy/outbound_index_test.ts",
  "control/policy/policy_cluster_test.ts",
  "control/policy/route_convert.ts",
  "control/policy/test_server.ts",
  "control/policy/watch_hub.ts",
  "proxy/discovery/control_client_test.ts",
  "proxy/identity/certify_client_test.ts",
  "proxy/testing/control_plane.ts",
];
const GEN_MESSAGES_IMPORTERS: readonly string[] = [
  "proxy/balance/bench.ts",
  "proxy/balance/config.ts",
  "proxy/bench/main.ts",
  "proxy/core/duration.ts",
  "proxy/discovery/clients.ts",
  "proxy/discovery/control_client_test.ts",
  "proxy/discovery/inbound_policy_test.ts",
  "proxy/discovery/reduce_destination_test.ts",
  "proxy/grpc/client_test.ts",
  "proxy/grpc/hostile_test.ts",
  "proxy/hostile_policy_test.ts",
  "proxy/http/retry/budget.ts",
  "proxy/http/retry/policy.ts",
  "proxy/http/retry/timeouts.ts",
  "proxy/http_data_path_test.ts",
  "proxy/identity/certify_client.ts",
  "proxy/identity/verify_response.ts",
  "proxy/identity/verify_response_test.ts",
  "proxy/inbound/authorize.ts",
  "proxy/inbound/authorize_test.ts",
  "proxy/inbound/http/authorize.ts",
  "proxy/inbound/http/authorize_test.ts",
  "proxy/inbound/http/stack_test.ts",
  "proxy/inbound/inbound.ts",
  "proxy/outbound/http/concrete.ts",
  "proxy/outbound/http/endpoint.ts",
  "proxy/outbound/http/logical.ts",
  "proxy/outbound/outbound.ts",
  "proxy/outbound/resolve.ts",
  "proxy/outbound/resolve_test.ts",
  "proxy/route/filters.ts",
  "proxy/route/filters_test.ts",
  "proxy/route/grpc_match.ts",
  "proxy/route/http_match.ts",
  "proxy/route/http_match_test.ts",
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
];

export const IMPORT_RULES: readonly ImportRule[] = [
  {
    name: "proto/ imports no project code",
    files: ["proto/"],
    forbid: ["control/", "proxy/", "init/", "manifests/", "tests/", "images/", "scripts/"],
  },
  { name: "control/ never imports proxy/", files: ["control/"], forbid: ["proxy/"] },
  { name: "proxy/ never imports control/", files: ["proxy/"], forbid: ["control/"] },
  { name: "init/ imports neither control/ nor proxy/", files: ["init/"], forbid: ["control/", "proxy/"] },
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
  // The proxy's layers: no feature folder imports upward (a lower layer back into a higher one).
  // The table for the proxy's folders is the proxy's to fill in; one rule shows the form.
  {
    name: "proxy/transport/ (L4) does not import the HTTP layer or the stacks above it",
    files: ["proxy/transport/"],
    forbid: ["proxy/http/", "proxy/inbound/", "proxy/outbound/", "proxy/route/", "proxy/balance/"],
  },
];
