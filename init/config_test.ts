import assert from "node:assert/strict";
import {
  DEFAULT_INIT_CONFIG,
  InitConfigError,
  parsePortRanges,
  resolveInitConfig,
  splitArgs,
} from "./config.ts";

Deno.test("init config: defaults skip the proxy's admin and control ports", () => {
  const c = resolveInitConfig(new Map(), () => undefined);
  assert.deepEqual(c, DEFAULT_INIT_CONFIG);
  assert.deepEqual(c.inboundPortsToIgnore, [{ from: 4190, to: 4190 }, { from: 4191, to: 4191 }]);
  assert.equal(c.proxyUid, 2102);
});

Deno.test("init config: Linkerd-style flags, both --f v and --f=v", () => {
  const { positional, flags } = splitArgs([
    "apply",
    "--proxy-uid",
    "1000",
    "--outbound-ports-to-ignore=25,8000-8010",
    "--iptables-mode",
    "legacy",
    "--ipv6=false",
  ]);
  assert.deepEqual(positional, ["apply"]);
  const c = resolveInitConfig(flags, () => undefined);
  assert.equal(c.proxyUid, 1000);
  assert.deepEqual(c.outboundPortsToIgnore, [{ from: 25, to: 25 }, { from: 8000, to: 8010 }]);
  assert.equal(c.mode, "legacy");
  assert.equal(c.ipv6, false);
});

Deno.test("init config: env fills in when a flag is absent, flags win", () => {
  const env: Record<string, string> = { WEFT_INIT_PROXY_UID: "7", WEFT_INIT_SUBNETS_TO_IGNORE: "10.0.0.0/8" };
  const c = resolveInitConfig(new Map([["proxy-uid", "8"]]), (n) => env[n]);
  assert.equal(c.proxyUid, 8);
  assert.deepEqual(c.subnetsToIgnore, ["10.0.0.0/8"]);
});

Deno.test("init config: bad values name the flag or variable", () => {
  assert.throws(
    () => parsePortRanges("80,70000", "--inbound-ports-to-ignore"),
    /--inbound-ports-to-ignore: "70000"/,
  );
  assert.throws(() => parsePortRanges("90-80", "X"), /ends before it starts/);
  assert.throws(
    () => resolveInitConfig(new Map(), (n) => n === "WEFT_INIT_PROXY_UID" ? "abc" : undefined),
    (e: Error) => e instanceof InitConfigError && e.message.startsWith("WEFT_INIT_PROXY_UID:"),
  );
  assert.throws(
    () => resolveInitConfig(new Map([["subnets-to-ignore", "10.0.0.0"]]), () => undefined),
    /CIDR/,
  );
  assert.throws(
    () => resolveInitConfig(new Map([["iptables-mode", "ebpf"]]), () => undefined),
    /auto, nft, legacy/,
  );
  assert.throws(() => resolveInitConfig(new Map([["bogus", "1"]]), () => undefined), /unknown flag --bogus/);
});
