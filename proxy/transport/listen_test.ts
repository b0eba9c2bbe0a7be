import assert from "node:assert/strict";
import * as net from "node:net";
import { listenAll, listenTcp } from "./listen.ts";

function connect(port: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const s = net.connect({ host: "127.0.0.1", port });
    s.once("connect", () => resolve(s));
    s.once("error", reject);
  });
}

Deno.test("listener close stops accepting at once and leaves established connections to the drain", async () => {
  const accepted: net.Socket[] = [];
  const l = await listenTcp({ ip: "127.0.0.1", port: 0 }, (s) => accepted.push(s));
  const client = await connect(l.addr.port);
  try {
    while (accepted.length === 0) await new Promise((r) => setTimeout(r, 5));
    let closed = false;
    let guard: ReturnType<typeof setTimeout> | undefined;
    const closing = l.close().then(() => closed = true);
    await Promise.race([closing, new Promise((r) => guard = setTimeout(r, 2000))]);
    clearTimeout(guard);
    assert.ok(closed, "close() resolved while a connection was still open");
    await assert.rejects(connect(l.addr.port), "no new connection is accepted");
    // The established connection still carries bytes both ways.
    const echoed = new Promise<string>((r) => client.once("data", (d) => r(String(d))));
    accepted[0].once("data", (d) => accepted[0].write(d));
    client.write("still here");
    assert.equal(await echoed, "still here");
  } finally {
    client.destroy();
    for (const s of accepted) s.destroy();
  }
});

/** A listen stand-in: addresses in `fail` throw with that code, the rest "bind". */
function fakeListen(fail: Record<string, string>) {
  const bound: string[] = [];
  const closed: string[] = [];
  const listen = (addr: { ip: string; port: number }) => {
    const key = `${addr.ip}:${addr.port}`;
    const code = fail[key];
    if (code) return Promise.reject(Object.assign(new Error(`listen ${code} ${key}`), { code }));
    bound.push(key);
    return Promise.resolve({
      addr,
      close: () => {
        closed.push(key);
        return Promise.resolve();
      },
    });
  };
  return { listen, bound, closed };
}

Deno.test("listenAll skips an IPv6 loopback the pod does not have, and falls back from [::] to 0.0.0.0", async () => {
  const warnings: string[] = [];
  const f = fakeListen({ "::1:4140": "EINVAL", ":::4143": "EAFNOSUPPORT" });
  const out = await listenAll(
    [{ ip: "127.0.0.1", port: 4140 }, { ip: "::1", port: 4140 }],
    () => {},
    (l) => warnings.push(l),
    f.listen,
  );
  assert.deepEqual(out.map((l) => `${l.addr.ip}:${l.addr.port}`), ["127.0.0.1:4140"]);
  const inbound = await listenAll([{ ip: "::", port: 4143 }], () => {}, (l) => warnings.push(l), f.listen);
  assert.deepEqual(inbound.map((l) => `${l.addr.ip}:${l.addr.port}`), ["0.0.0.0:4143"]);
  assert.equal(warnings.length, 2);
  assert.match(warnings[0], /\[::1\]:4140 \(EINVAL\).*skipped/);
  assert.match(warnings[1], /\[::\]:4143 \(EAFNOSUPPORT\).*0\.0\.0\.0/);
});

Deno.test("listenAll fails on any other error, or with nothing bound, and closes what it had opened", async () => {
  const f = fakeListen({ "::1:4140": "EADDRINUSE" });
  await assert.rejects(
    listenAll([{ ip: "127.0.0.1", port: 4140 }, { ip: "::1", port: 4140 }], () => {}, () => {}, f.listen),
    /EADDRINUSE/,
  );
  assert.deepEqual(f.closed, ["127.0.0.1:4140"]);
  const g = fakeListen({ "127.0.0.1:4140": "EADDRINUSE" });
  await assert.rejects(
    listenAll([{ ip: "127.0.0.1", port: 4140 }], () => {}, () => {}, g.listen),
    /EADDRINUSE/,
  );
  const h = fakeListen({ "::1:4140": "EINVAL" });
  await assert.rejects(listenAll([{ ip: "::1", port: 4140 }], () => {}, () => {}, h.listen), /EINVAL/);
});

const root = Deno.uid() === 0;

Deno.test({
  name: "listenAll in a real pod namespace whose loopback has IPv6 disabled: outbound serves on 127.0.0.1",
  ignore: !root,
}, async () => {
  const ns = `weft-v6off-${Deno.pid}`;
  const run = (args: string[]) =>
    new Deno.Command(args[0], { args: args.slice(1), stdout: "piped", stderr: "piped" }).output();
  await run(["ip", "netns", "add", ns]);
  try {
    await run(["ip", "-n", ns, "link", "set", "lo", "up"]);
    await run(["ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.lo.disable_ipv6=1"]);
    const mod = new URL("./listen.ts", import.meta.url).href;
    // The same two addresses the injector's dual-stack default gives the outbound proxy.
    const script = `
      import { listenAll } from ${JSON.stringify(mod)};
      import * as net from "node:net";
      const warnings = [];
      const ls = await listenAll([{ ip: "127.0.0.1", port: 4140 }, { ip: "::1", port: 4140 }],
        (s) => s.end("served"), (l) => warnings.push(l));
      const got = await new Promise((r) => {
        const c = net.connect({ host: "127.0.0.1", port: 4140 });
        let data = "";
        c.on("data", (d) => data += d);
        c.on("close", () => r(data));
      });
      console.log(JSON.stringify({ addrs: ls.map((l) => l.addr.ip), warnings, got }));
      for (const l of ls) await l.close();
      Deno.exit(0);`;
    const out = await run(["ip", "netns", "exec", ns, Deno.execPath(), "eval", "--ext=js", script]);
    const text = new TextDecoder().decode(out.stdout).trim();
    assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
    const r = JSON.parse(text);
    assert.deepEqual(r.addrs, ["127.0.0.1"]);
    assert.equal(r.got, "served");
    assert.equal(r.warnings.length, 1, text);
  } finally {
    await run(["ip", "netns", "del", ns]);
  }
});
