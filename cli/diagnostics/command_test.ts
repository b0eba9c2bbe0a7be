// `weft diagnostics` argument handling: bad input is a usage error naming what is wrong, before any
// call to the cluster (the environment here fails the test if it is touched).
import assert from "node:assert/strict";
import { dispatch } from "../dispatch.ts";
import { recordingContext } from "../testing.ts";
import { diagnosticsCommand, type DiagnosticsEnv, runDiagnostics } from "./command.ts";
import { uninjectCommand } from "../uninject.ts";

const untouchable = new Proxy({}, {
  get(_t, p) {
    throw new Error(`the cluster was used (${String(p)}) before the arguments were checked`);
  },
});

function env(): DiagnosticsEnv {
  return {
    kc: untouchable as DiagnosticsEnv["kc"],
    kube: untouchable as DiagnosticsEnv["kube"],
    controlPlaneNs: "weft",
    defaultNs: "default",
  };
}

async function run(...args: string[]) {
  const ctx = recordingContext();
  const code = await dispatch([{ ...diagnosticsCommand, run: (a, c) => runDiagnostics(a, c, env) }], [
    "diagnostics",
    ...args,
  ], ctx);
  return { code, out: ctx.stdout.join(""), err: ctx.stderr.join("\n") };
}

Deno.test("diagnostics: usage errors name what is wrong and exit 2", async () => {
  const cases: [string[], RegExp][] = [
    [["nope"], /unknown diagnostics command "nope"/],
    [["endpoints"], /at least one AUTHORITY/],
    [["endpoints", "web.default.svc.cluster.local"], /not an authority/],
    [["policy", "deploy/web", "80", "extra"], /a resource and a port/],
    [["policy", "web:80"], /"web" is not a Service name/],
    [["policy", "deploy/web", "http"], /"http" is not a port/],
    [["policy", "cm/web", "80"], /unknown resource kind "cm"/],
    [["profile", "web:80", "-o", "yaml"], /-o: "yaml" is not table or json/],
    [["proxy-metrics"], /takes one pod\/NAME or deploy\/NAME/],
    [["controller-metrics", "extra"], /takes no arguments/],
    [["endpoints", "web:80", "--timeout", "0"], /--timeout/],
    [["endpoints", "web:80", "--bogus"], /unknown flag --bogus/],
  ];
  for (const [args, want] of cases) {
    const r = await run(...args);
    assert.equal(r.code, 2, `${args.join(" ")}: ${r.err}`);
    assert.match(r.err, want, args.join(" "));
  }
});

Deno.test("diagnostics: --help and no subcommand print the usage", async () => {
  const help = await run("--help");
  assert.equal(help.code, 0);
  assert.match(help.out, /weft diagnostics endpoints AUTHORITY/);
  assert.match(help.out, /--control-plane-namespace/);
  assert.equal((await run()).code, 2);
});

Deno.test("uninject: reads stdin with -, and a usage error without an input", async () => {
  const pod =
    "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - {name: app, image: x}\n" +
    "  - {name: linkerd-proxy, image: weft}\n";
  const ctx = recordingContext({ readStdin: () => Promise.resolve(pod) });
  assert.equal(await dispatch([uninjectCommand], ["uninject", "-"], ctx), 0);
  assert.doesNotMatch(ctx.stdout.join(""), /linkerd-proxy/);
  assert.match(ctx.stderr.join("\n"), /1 pod spec\(s\) uninjected/);
  const bad = recordingContext();
  assert.equal(await dispatch([uninjectCommand], ["uninject"], bad), 2);
  assert.match(bad.stderr.join("\n"), /one FILE/);
});
