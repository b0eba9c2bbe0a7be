// `deno task cluster:up [--kind]`, `cluster:down [--kind]`, `cluster:status`: the local single-node cluster.

import { down, status, up } from "./cluster.ts";
import { kindDown, kindUp } from "./kind.ts";
import { MAX_WORKERS } from "./config.ts";

const log = (s: string) => console.log(`[cluster] ${s}`);
const [command, ...flags] = Deno.args;
const kind = flags.includes("--kind");

/** `--nodes=N`: how many nodes `up` should leave running (1 + N-1 workers); absent keeps what exists. */
function nodesFlag(): number | undefined {
  const f = flags.find((a) => a.startsWith("--nodes"));
  if (f === undefined) return undefined;
  const v = f.includes("=") ? f.slice(f.indexOf("=") + 1) : flags[flags.indexOf(f) + 1];
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
        "usage: deno run -A tests/cluster/main.ts up [--kind] [--nodes=N] | down [--kind] | status",
      );
      Deno.exit(2);
  }
} catch (e) {
  console.error(`[cluster] FAILED: ${e instanceof Error ? e.message : e}`);
  Deno.exit(1);
}
