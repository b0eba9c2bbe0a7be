import { assertEquals, assertThrows } from "./assert.ts";
import { parseArgs } from "./main.ts";

Deno.test("policy flags: defaults", () => {
  const c = parseArgs([], undefined);
  assertEquals([c.grpcHost, c.grpcPort, c.policy.defaultPolicy, c.writeStatus], [
    "0.0.0.0",
    8090,
    "all-unauthenticated",
    true,
  ]);
});

Deno.test("policy flags: values", () => {
  const c = parseArgs([
    "--addr=127.0.0.1:0",
    "--control-plane-namespace=mesh",
    "--default-policy=deny",
    "--cluster-networks=10.0.0.0/8,fd00::/8",
    "--detect-timeout=3s",
  ], "/k");
  assertEquals([
    c.grpcHost,
    c.grpcPort,
    c.policy.defaultPolicy,
    c.policy.clusterNetworks,
    c.policy.detectTimeoutMs,
    c.kubeconfig,
    c.policy.controlPlaneNamespace,
  ], [
    "127.0.0.1",
    0,
    "deny",
    ["10.0.0.0/8", "fd00::/8"],
    3000,
    "/k",
    "mesh",
  ]);
});

const bad: [string[], string][] = [
  [["--default-policy=open"], '--default-policy: "open" is not a default policy'],
  [["--cluster-networks=10.0.0.0"], "--cluster-networks:"],
  [["--grpc-addr=nowhere"], '--grpc-addr: "nowhere" is not host:port (no :port)'],
  [["--addr=[::1]"], '--addr: "[::1]" is not host:port (no :port after the bracketed address)'],
  [["--frobnicate=1"], "unknown flag --frobnicate"],
  [["--no-status-writes=maybe"], '--no-status-writes: "maybe" is not true or false'],
  [["--detect-timeout=10"], '--detect-timeout: "10" is not a duration (a number has no unit)'],
];
for (const [args, want] of bad) {
  Deno.test(`policy flags: ${args.join(" ")} is rejected`, () => {
    const e = assertThrows(() => parseArgs(args, undefined));
    if (!e.message.includes(want)) throw new Error(`"${e.message}" lacks "${want}"`);
  });
}
