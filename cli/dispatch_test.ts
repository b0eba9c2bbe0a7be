import assert from "node:assert/strict";
import { createIdentity } from "../manifests/certs.ts";
import { COMMANDS } from "./commands.ts";
import { type Command, UsageError } from "./context.ts";
import { dispatch, findCommand, usage } from "./dispatch.ts";
import { recordingContext } from "./testing.ts";

const echo: Command = {
  name: "echo",
  aliases: ["say"],
  summary: "prints its arguments",
  run: async (args, ctx) => {
    if (args[0] === "--bad") throw new UsageError("--bad is not a flag");
    if (args[0] === "--boom") throw new Error("it broke");
    await ctx.out(args.join(" "));
    return 0;
  },
};

Deno.test("dispatch: runs a command by name or alias with the rest of the arguments", async () => {
  const ctx = recordingContext();
  assert.deepEqual(await dispatch([echo], ["echo", "a", "b"], ctx), 0);
  assert.deepEqual(await dispatch([echo], ["say", "c"], ctx), 0);
  assert.deepEqual(ctx.stdout, ["a b", "c"]);
});

Deno.test("dispatch: an unknown command is refused with the list, exit 2", async () => {
  const ctx = recordingContext();
  assert.deepEqual(await dispatch([echo], ["nope"], ctx), 2);
  assert(ctx.stderr[0].includes('unknown command "nope"'));
  assert(ctx.stderr[0].includes("echo"));
});

Deno.test("dispatch: a usage error exits 2 naming the command, another error exits 1", async () => {
  const ctx = recordingContext();
  assert.deepEqual(await dispatch([echo], ["echo", "--bad"], ctx), 2);
  assert(ctx.stderr[0].startsWith("weft echo: --bad is not a flag"));
  assert.deepEqual(await dispatch([echo], ["echo", "--boom"], ctx), 1);
  assert.deepEqual(ctx.stderr[1], "weft echo: it broke");
});

Deno.test("dispatch: no command prints the usage and exits 2; help exits 0", async () => {
  const ctx = recordingContext();
  assert.deepEqual(await dispatch([echo], [], ctx), 2);
  assert.deepEqual(await dispatch([echo], ["help"], ctx), 0);
  assert(ctx.stdout[0].includes("echo  prints its arguments"));
});

Deno.test("commands: the lifecycle tools are reachable under their names and old task names", () => {
  for (const n of ["check", "mesh:check", "deploy", "undeploy", "inject", "render"]) {
    assert(findCommand(COMMANDS, n), n);
  }
  const names = COMMANDS.flatMap((c) => [c.name, ...(c.aliases ?? [])]);
  assert.deepEqual(new Set(names).size, names.length, "a name is used twice");
  assert(usage(COMMANDS).includes("inject"));
});

Deno.test("weft inject: injects YAML read from a file through the injector's offline CLI", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const file = `${dir}/d.yaml`;
    await Deno.writeTextFile(
      file,
      `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: demo}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}, annotations: {linkerd.io/inject: enabled}}
    spec: {containers: [{name: web, image: nginx}]}
`,
    );
    const id = await createIdentity({ namespace: "weft", trustDomain: "cluster.local", now: Date.now() });
    await Deno.writeTextFile(`${dir}/ca.crt`, id.material.anchorsPem);
    const ctx = recordingContext();
    const code = await dispatch(COMMANDS, ["inject", file, `--trust-anchors-file=${dir}/ca.crt`], ctx);
    assert.deepEqual(code, 0, ctx.stderr.join("\n"));
    assert(ctx.stdout.join("").includes("linkerd-proxy"), ctx.stdout.join(""));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
