import assert from "node:assert/strict";
import { anchorFromDir, newAnchorName, parseArgs, UsageError } from "./main.ts";

const env = { KUBECONFIG: "/k" };

Deno.test("parseArgs: flags per command, defaults, and usage errors that name the problem", () => {
  const a = parseArgs(["anchor", "--anchor-dir=/tmp/x", "--timeout=2m"], env);
  assert.equal(a.kubeconfig, "/k");
  assert.deepEqual(a.wait, { timeoutMs: 120_000, intervalMs: 5_000 });
  const bad: [string[], RegExp][] = [
    [["rotate"], /unknown command "rotate"/],
    [["anchor"], /name the new anchor: --anchor-dir/],
    [["anchor", "--anchor-cert=/a"], /--anchor-cert needs --anchor-key/],
    [
      ["add-anchor", "--anchor-dir=/a", "--anchor-cert=/b"],
      /--anchor-dir and --anchor-cert exclude each other/,
    ],
    [["install-issuer"], /--anchor-dir, --anchor-cert\/--anchor-key or --issuer-cert\/--issuer-key/],
    [["install-issuer", "--issuer-cert=/a"], /--issuer-cert and --issuer-key go together/],
    [["wait-trust", "--renew"], /unknown flag --renew/],
    [["install-issuer", "--anchor-dir=/a", "--renew=yes"], /--renew takes no value/],
    [["wait-trust", "--timeout=soon"], /--timeout/],
    [["wait-leaves", "--interval=10ms"], /at least 500ms/],
  ];
  for (const [args, re] of bad) {
    assert.throws(
      () => parseArgs(args, env),
      (e: Error) => e instanceof UsageError && re.test(e.message),
      args.join(" "),
    );
  }
});

Deno.test("anchorFromDir creates the anchor once (key 0600), reuses it, and refuses half a pair", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const logs: string[] = [];
    const o = {
      create: true,
      lifetimeMs: 3_600_000,
      commonName: newAnchorName(0),
      log: (s: string) => logs.push(s),
    };
    const first = await anchorFromDir(`${dir}/new`, o);
    assert.equal((await Deno.stat(`${dir}/new/ca.key`)).mode! & 0o777, 0o600);
    assert.match(logs[0], /created a new trust anchor \(CN=root-19700101t000000z\.weft\.cluster\.local/);
    const again = await anchorFromDir(`${dir}/new`, o);
    assert.deepEqual(again, first);
    assert.equal(logs.length, 1);
    await Deno.remove(`${dir}/new/ca.key`);
    await assert.rejects(anchorFromDir(`${dir}/new`, o), /holds ca.crt but no ca.key/);
    await assert.rejects(anchorFromDir(`${dir}/none`, { ...o, create: false }), /no ca.crt and ca.key there/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
