/**
 * `deno task up`: the one command that brings up a cluster, the mesh and a demo, and shows it
 * working. Each stage runs when the project has it, and says plainly when it does not yet.
 */
import { ADMIN_KUBECONFIG } from "../tests/cluster/config.ts";

const root = new URL("..", import.meta.url).pathname;
// The stages after `cluster` talk to the cluster it brought up, unless the caller chose another.
const env = { KUBECONFIG: Deno.env.get("KUBECONFIG") || ADMIN_KUBECONFIG };

interface Stage {
  name: string;
  /** A file whose presence means the stage exists. */
  needs: string;
  args: string[];
}

const stages: Stage[] = [
  { name: "cluster", needs: "tests/cluster/main.ts", args: ["run", "-A", "tests/cluster/main.ts", "up"] },
  { name: "mesh", needs: "manifests/main.ts", args: ["run", "-A", "manifests/main.ts", "deploy"] },
  { name: "demo", needs: "tests/demo/main.ts", args: ["run", "-A", "tests/demo/main.ts"] },
];

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(`${root}${path}`);
    return true;
  } catch {
    return false;
  }
}

let missing = 0;
for (const stage of stages) {
  if (!(await exists(stage.needs))) {
    console.log(`[up] ${stage.name}: not built yet (${stage.needs} does not exist) — skipped`);
    missing++;
    continue;
  }
  console.log(`[up] ${stage.name}: starting`);
  const status = await new Deno.Command(Deno.execPath(), { args: stage.args, cwd: root, env }).spawn().status;
  if (!status.success) {
    console.error(`[up] ${stage.name}: failed (exit ${status.code})`);
    Deno.exit(1);
  }
  console.log(`[up] ${stage.name}: ready`);
}
console.log(
  missing === 0 ? "[up] cluster, mesh and demo are up" : `[up] done; ${missing} stage(s) not built yet`,
);
