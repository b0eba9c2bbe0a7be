// `deno task cluster:up [--kind]`, `cluster:down [--kind]`, `cluster:status`: the local single-node cluster.

import { down, status, up } from "./cluster.ts";
import { kindDown, kindUp } from "./kind.ts";

const log = (s: string) => console.log(`[cluster] ${s}`);
const [command, ...flags] = Deno.args;
const kind = flags.includes("--kind");

try {
  switch (command) {
    case "up": {
      if (kind) {
        const kubeconfig = await kindUp(log);
        console.log(`kubeconfig: ${kubeconfig}`);
        console.log(`export KUBECONFIG=${kubeconfig}`);
        break;
      }
      const { kubeconfig, kubectl } = await up(log);
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
      console.error("usage: deno run -A tests/cluster/main.ts up [--kind] | down [--kind] | status");
      Deno.exit(2);
  }
} catch (e) {
  console.error(`[cluster] FAILED: ${e instanceof Error ? e.message : e}`);
  Deno.exit(1);
}
