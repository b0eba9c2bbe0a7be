// `deno task cluster:up [--kind] [--nodes=N] [--name=east]`, `cluster:down [--kind] [--name=east]`,
// `cluster:status [--name=east]`: the local clusters. Without --name it is "west", the default cluster.

const log = (s: string) => console.log(`[cluster] ${s}`);
const [command, ...flags] = Deno.args;
const kind = flags.includes("--kind");

/** The value of `--flag=v` or `--flag v`, or undefined. */
function flagValue(name: string): string | undefined {
  const f = flags.find((a) => a === name || a.startsWith(`${name}=`));
  if (f === undefined) return undefined;
  return f.includes("=") ? f.slice(f.indexOf("=") + 1) : flags[flags.indexOf(f) + 1];
}

// The cluster modules read their names and paths once, when loaded (config.ts): choose the cluster first.
const name = flagValue("--name") ?? "west";
if (name !== "west" && name !== "east") {
  console.error(`[cluster] --name=${name}: want west (the default) or east`);
  Deno.exit(2);
}
if (name === "east" && kind) {
  console.error("[cluster] --name=east is a local cluster; --kind makes a kind cluster");
  Deno.exit(2);
}
Deno.env.set("WEFT_CLUSTER", name);
const { down, status, up } = await import("./cluster.ts");
const { kindDown, kindUp } = await import("./kind.ts");
const { MAX_WORKERS } = await import("./config.ts");

/** `--nodes=N`: how many nodes `up` should leave running (1 + N-1 workers); absent keeps what exists. */
function nodesFlag(): number | undefined {
  const v = flagValue("--nodes");
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1 || n > MAX_WORKERS + 1) {
    throw new Error(`--nodes=${v}: want a whole number from 1 to ${MAX_WORKERS + 1}`);
  }
  return n;
}

try {
  switch (command) {
    case "up": {
      if (kind) {
        const kubeconfig = await kindUp(log);
        console.log(`kubeconfig: ${kubeconfig}`);
        console.log(`export KUBECONFIG=${kubeconfig}`);
        break;
      }
      const { kubeconfig, kubectl } = await up(log, { nodes: nodesFlag() });
      console.log(`kubeconfig: ${kubeconfig}`);
      console.log(`kubectl:    ${kubectl}`);
      console.log(`export KUBECONFIG=${kubeconfig}`);
      break;
    }
    case "down":
      await (kind ? kindDown(log) : down(log));
      break;
    case "status":
      console.log(await status());
      break;
    default:
      console.error(
        "usage: deno run -A tests/cluster/main.ts up [--kind] [--nodes=N] [--name=east] | down [--kind] " +
          "[--name=east] | status [--name=east]",
      );
      Deno.exit(2);
  }
} catch (e) {
  console.error(`[cluster] FAILED: ${e instanceof Error ? e.message : e}`);
  Deno.exit(1);
}
