/**
 * Tier 3: init against real iptables inside a network namespace this test creates (and always
 * deletes). Skipped with a reason when not root.
 */
import assert from "node:assert/strict";

const isRoot = Deno.uid() === 0;
const deno = Deno.execPath();
const initMain = new URL("./main.ts", import.meta.url).pathname;
const ignore = !isRoot;
if (ignore) console.warn("init netns tests skipped: they need root to create network namespaces");

async function sh(cmd: string, args: string[], opts: { env?: Record<string, string>; check?: boolean } = {}) {
  const out = await new Deno.Command(cmd, { args, env: opts.env, stdout: "piped", stderr: "piped" }).output();
  const r = {
    code: out.code,
    stdout: new TextDecoder().decode(out.stdout),
    stderr: new TextDecoder().decode(out.stderr),
  };
  if (opts.check !== false && r.code !== 0) {
    throw new Error(`${cmd} ${args.join(" ")} → ${r.code}: ${r.stderr}`);
  }
  return r;
}

async function withNetns(fn: (ns: string) => Promise<void>): Promise<void> {
  const ns = `weft-init-${Deno.pid}-${Math.floor(Math.random() * 1e6)}`;
  await sh("ip", ["netns", "add", ns]);
  try {
    await sh("ip", ["-n", ns, "link", "set", "lo", "up"]);
    await fn(ns);
  } finally {
    await sh("ip", ["netns", "del", ns], { check: false });
  }
}

function init(ns: string, args: string[], prefix: string[] = []) {
  return sh("ip", ["netns", "exec", ns, ...prefix, deno, "run", "-A", "--cached-only", initMain, ...args], {
    check: false,
  });
}

async function natDump(ns: string, v6 = false): Promise<string> {
  const r = await sh("ip", [
    "netns",
    "exec",
    ns,
    v6 ? "ip6tables-nft-save" : "iptables-nft-save",
    "-t",
    "nat",
  ]);
  // Drop the timestamp comments and packet counters so dumps compare by content.
  return r.stdout.split("\n").filter((l) => !l.startsWith("#")).map((l) => l.replace(/\[\d+:\d+\]/, "")).join(
    "\n",
  );
}

Deno.test({
  name: "init netns: apply installs the redirects, twice gives the same rules, cleanup removes them",
  ignore,
}, async () => {
  await withNetns(async (ns) => {
    // Someone else's rule in the same table must survive both apply and cleanup.
    await sh("ip", [
      "netns",
      "exec",
      ns,
      "iptables-nft",
      "-t",
      "nat",
      "-A",
      "OUTPUT",
      "-p",
      "udp",
      "-j",
      "RETURN",
    ]);
    const before = await natDump(ns);
    const args = [
      "apply",
      "--iptables-mode",
      "nft",
      "--inbound-ports-to-ignore",
      "4190,4191,22",
      "--proxy-uid",
      "2102",
    ];
    const first = await init(ns, args);
    assert.equal(first.code, 0, first.stderr);
    const once = await natDump(ns);
    assert.match(
      once,
      /-A PREROUTING -m comment --comment "proxy-init\/install-proxy-init-prerouting" -j PROXY_INIT_REDIRECT/,
    );
    assert.match(once, /-A PROXY_INIT_OUTPUT -m owner --uid-owner 2102 .* -j RETURN/);
    assert.match(once, /-A PROXY_INIT_REDIRECT -p tcp -m multiport --dports 4190,4191,22 .* -j RETURN/);
    assert.match(once, /REDIRECT --to-ports 4143/);
    assert.match(await natDump(ns, true), /REDIRECT --to-ports 4140/);
    const second = await init(ns, args);
    assert.equal(second.code, 0, second.stderr);
    assert.equal(await natDump(ns), once, "a second apply changed the rules");
    const clean = await init(ns, ["cleanup", "--iptables-mode", "nft"]);
    assert.equal(clean.code, 0, clean.stderr);
    assert.equal(await natDump(ns), before, "cleanup left something or removed a foreign rule");
    assert.doesNotMatch(await natDump(ns, true), /PROXY_INIT/);
  });
});

Deno.test(
  { name: "init netns: verify proves the outbound redirect, and fails without it", ignore },
  async () => {
    await withNetns(async (ns) => {
      // A veth pair with both ends in this namespace: a failed redirect's SYN goes nowhere else.
      await sh("ip", ["-n", ns, "link", "add", "d0", "type", "veth", "peer", "name", "d1"]);
      await sh("ip", ["-n", ns, "link", "set", "d1", "up"]);
      await sh("ip", ["-n", ns, "addr", "add", "10.250.0.1/24", "dev", "d0"]);
      await sh("ip", ["-n", ns, "link", "set", "d0", "up"]);
      const without = await init(ns, [
        "verify",
        "--probe-addr",
        "10.250.0.2:80",
        "--verify-timeout-ms",
        "800",
      ]);
      assert.notEqual(without.code, 0);
      assert.match(without.stderr, /verify: /);
      assert.equal((await init(ns, ["apply", "--iptables-mode", "nft"])).code, 0);
      const ok = await init(ns, ["verify", "--probe-addr", "10.250.0.2:80"]);
      assert.equal(ok.code, 0, ok.stderr);
      assert.match(ok.stdout, /verified: 10\.250\.0\.2:80 arrives on port 4140/);
    });
  },
);

Deno.test({ name: "init netns: clear errors without NET_ADMIN and without iptables", ignore }, async () => {
  await withNetns(async (ns) => {
    const noCap = await init(ns, ["apply", "--iptables-mode", "nft"], [
      "setpriv",
      "--bounding-set=-net_admin",
      "--inh-caps=-net_admin",
    ]);
    assert.equal(noCap.code, 1);
    assert.match(noCap.stderr, /needs the NET_ADMIN capability/);
    const empty = await Deno.makeTempDir();
    try {
      const noTool = await init(ns, ["apply"], ["/usr/bin/env", `PATH=${empty}`]);
      assert.equal(noTool.code, 1);
      assert.match(noTool.stderr, /iptables not found.*install iptables/);
    } finally {
      await Deno.remove(empty, { recursive: true });
    }
    assert.doesNotMatch(await natDump(ns), /PROXY_INIT/);
  });
});
