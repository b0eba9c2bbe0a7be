import assert from "node:assert/strict";
import { queryAll } from "./connect.ts";
import type { Prometheus } from "./prometheus.ts";
import { statusLine } from "./status_line.ts";
import { offlineKubeconfig, recordingContext } from "./testing.ts";

function capture(isTty: boolean, env: Record<string, string> = {}) {
  const written: string[] = [];
  const line = statusLine((t) => written.push(t), isTty, env);
  return { line, written };
}

Deno.test("progress is drawn in place on a terminal's stderr; a note erases it first", () => {
  const { line, written } = capture(true, { TERM: "xterm" });
  line.status("querying: 0/2");
  line.status("querying: 1/2");
  line.err("a note");
  line.status("");
  line.status("querying: 2/2");
  line.status("");
  assert.deepEqual(written, [
    "\r\x1b[Kquerying: 0/2",
    "\r\x1b[Kquerying: 1/2",
    "\r\x1b[K",
    "a note\n",
    "\r\x1b[Kquerying: 2/2",
    "\r\x1b[K",
  ]);
});

Deno.test("no progress line when stderr is not a terminal or TERM is dumb; notes still printed", () => {
  for (const [isTty, env] of [[false, {}], [true, { TERM: "dumb" }]] as const) {
    const { line, written } = capture(isTty, env);
    line.status("querying: 0/2");
    line.err("weft stat: failed");
    line.status("");
    assert.deepEqual(written, ["weft stat: failed\n"], JSON.stringify({ isTty, env }));
  }
});

Deno.test("a long wait on the metrics store reports its progress, and clears it when done", async () => {
  const statuses: string[] = [];
  const ctx = recordingContext({ status: (t) => statuses.push(t) });
  let release!: () => void;
  const gate = new Promise<void>((r) => release = r);
  const prom: Prometheus = {
    where: "prom:9090",
    query: async (q) => {
      if (q === "slow") await gate;
      return [{ metric: { q }, value: 1 }];
    },
  };
  const pending = queryAll(prom, { a: "fast", b: "slow", c: "" }, ctx);
  await new Promise((r) => setTimeout(r, 10));
  assert.deepEqual(
    statuses,
    ["querying prom:9090: 0/2", "querying prom:9090: 1/2"],
    "the empty query is not sent",
  );
  release();
  const r = await pending;
  assert.deepEqual(statuses.slice(2), ["querying prom:9090: 2/2", ""]);
  assert.deepEqual([r.a.length, r.b.length, r.c.length], [1, 1, 0]);
});

Deno.test("the installed command in a pipe: stderr holds only the error line, no progress or escapes", async () => {
  const kubeconfig = await offlineKubeconfig();
  try {
    const out = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        new URL("./main.ts", import.meta.url).pathname,
        "stat",
        "deploy",
        "-n",
        "x",
        "--kubeconfig",
        kubeconfig,
        "--prometheus-url",
        "http://127.0.0.1:1",
      ],
      env: { TERM: "xterm" },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stderr = new TextDecoder().decode(out.stderr);
    assert.equal(out.code, 1, stderr);
    assert.equal(new TextDecoder().decode(out.stdout), "");
    for (const bad of ["\x1b", "\r", "querying", "finding"]) {
      assert.ok(!stderr.includes(bad), `${JSON.stringify(bad)} in ${JSON.stringify(stderr)}`);
    }
    assert.match(stderr, /^weft stat: .+\n$/);
  } finally {
    await Deno.remove(kubeconfig);
  }
});
